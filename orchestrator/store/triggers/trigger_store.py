"""Triggers: created with a task's deferral, run by triggerers under leases, deleted
when they fire (issue 30).

A trigger row is what a triggerer rebuilds the trigger from (classpath, kwargs, the
DAG file). A triggerer takes free rows (no holder, or a lease that has expired) with
``claim_triggers`` and extends the leases of all it holds in one statement with
``renew_triggers``; a triggerer killed with -9 stops renewing, and within one lease
another takes its triggers. Running a trigger twice for a while (a frozen triggerer
resuming) is harmless: the event's write, ``fire_triggers``, is a compare-and-set on
the task instance (``deferred`` on that trigger), so an event resumes its task once.

>>> store.claim_triggers("triggerer-1", now, timedelta(seconds=30), limit=1000)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, delete, insert, or_, select, update

from orchestrator.states import TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import Claim, Record
from orchestrator.store.tasks.deferral import defer_locked, resume_locked

log = logging.getLogger(__name__)
tr = m.triggers
ti = m.task_instances
TIMEOUT_BATCH = 500  # deferred instances past their timeout failed per call


@dataclass(frozen=True)
class TriggerRow(Record):
    """A trigger as a triggerer rebuilds it."""

    id: int
    classpath: str
    kwargs: str
    fileloc: str | None


@dataclass(frozen=True)
class DeferredRecord(Record):
    """A deferred task instance and its trigger (CLI, UI, explainer)."""

    ti_id: int
    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    trigger_id: int
    classpath: str
    since: datetime
    timeout_at: datetime | None
    triggerer_id: str | None
    lease_expires_at: datetime | None


class TriggerStore(StoreBase):
    def defer_task(self, claim: Claim, defer: dict[str, Any], now: datetime) -> bool:
        """A try that deferred (the worker's outcome): its trigger row and the instance
        ``deferred`` on it, in one transaction; False if the write was fenced out."""
        try:
            fileloc = self.spec(claim.dag_id, claim.version_hash).fileloc  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - an unknown version: triggers from modules only
            fileloc = None
        with self.write() as conn:
            trigger_id = conn.execute(
                insert(tr)
                .values(
                    classpath=defer["classpath"],
                    kwargs=defer["kwargs"],
                    created_at=now,
                    fileloc=fileloc,
                )
                .returning(tr.c.id)
            ).scalar_one()
            ok = defer_locked(
                conn,
                claim,
                trigger_id,
                method_name=defer["method_name"],
                kwargs_json=defer.get("next_kwargs") or "{}",
                timeout=defer.get("timeout"),
                classpath=defer["classpath"],
                now=now,
            )
            if not ok:
                conn.execute(delete(tr).where(tr.c.id == trigger_id))
        if ok:
            log.info(
                "deferred dag_id=%s run_id=%s task_id=%s try=%s trigger=%s (%s)",
                claim.dag_id,
                claim.run_id,
                claim.task_id,
                claim.try_number,
                trigger_id,
                defer["classpath"],
            )
        return ok

    def claim_triggers(
        self, triggerer_id: str, now: datetime, lease: timedelta, *, limit: int
    ) -> list[TriggerRow]:
        """Take up to ``limit`` free triggers (no holder, or an expired lease)."""
        if limit <= 0:
            return []
        free = or_(tr.c.triggerer_id.is_(None), tr.c.lease_expires_at < now)
        pick = select(tr.c.id).where(free).order_by(tr.c.id).limit(limit)
        if self.is_postgres:
            pick = pick.with_for_update(skip_locked=True)
        with self.write() as conn:
            rows = conn.execute(
                update(tr)
                .where(tr.c.id.in_(pick.scalar_subquery()), free)
                .values(triggerer_id=triggerer_id, lease_expires_at=now + lease)
                .returning(tr.c.id, tr.c.classpath, tr.c.kwargs, tr.c.fileloc)
            ).all()
        return sorted(
            (TriggerRow(r.id, r.classpath, r.kwargs, r.fileloc) for r in rows), key=lambda t: t.id
        )

    def renew_triggers(self, triggerer_id: str, now: datetime, lease: timedelta) -> set[int]:
        """Extend the lease of every trigger this triggerer holds; the ids it still holds
        (one it lost to another triggerer, or that fired, is not among them)."""
        with self.write() as conn:
            return set(
                conn.execute(
                    update(tr)
                    .where(tr.c.triggerer_id == triggerer_id)
                    .values(lease_expires_at=now + lease)
                    .returning(tr.c.id)
                ).scalars()
            )

    def release_triggers(self, triggerer_id: str) -> int:
        """A triggerer stopping cleanly gives its triggers back at once."""
        with self.write() as conn:
            return conn.execute(
                update(tr)
                .where(tr.c.triggerer_id == triggerer_id)
                .values(triggerer_id=None, lease_expires_at=None)
            ).rowcount

    def fire_triggers(self, events: dict[int, str], now: datetime) -> list[int]:
        """The first events of these triggers (id -> payload JSON): their task instances
        queued to resume (same try), the triggers deleted, in one transaction. The ids
        of the instances resumed: an event for a trigger whose instance is no longer
        deferred on it (fired already, cleared, marked, timed out) resumes nothing."""
        if not events:
            return []
        with self.write() as conn:
            resumed = resume_locked(conn, events, now)
            conn.execute(delete(tr).where(tr.c.id.in_(sorted(events))))
            if resumed:
                _events_of(conn, resumed, now, "task_resumed", "trigger fired: queued to resume")
        return resumed

    def fail_trigger(self, trigger_id: int, error: str, now: datetime) -> str | None:
        """A trigger that raised (or could not be built): its task's try fails with the
        error (retried per its policy), the trigger is deleted. The new state, or None."""
        with self.read() as conn:
            row = conn.execute(
                select(ti.c.id, ti.c.try_number).where(
                    ti.c.trigger_id == trigger_id, ti.c.state == TaskState.DEFERRED
                )
            ).first()
        state = None
        if row is not None:
            state = self._fail_attempt(  # type: ignore[attr-defined]
                row.id,
                row.try_number,
                None,
                error,
                None,
                now,
                try_state="failed",
                extra=ti.c.trigger_id == trigger_id,
                from_state=TaskState.DEFERRED,
            )
        with self.write() as conn:
            conn.execute(delete(tr).where(tr.c.id == trigger_id))
        return state

    def time_out_deferred(self, now: datetime) -> int:
        """Fail the tries of deferred instances past their trigger's timeout (retried per
        the task's policy, as Airflow's deferral timeout); how many."""
        with self.read() as conn:
            rows = conn.execute(
                select(ti.c.id, ti.c.try_number, ti.c.trigger_id, ti.c.trigger_timeout, tr.c.classpath)
                .join(tr, tr.c.id == ti.c.trigger_id, isouter=True)
                .where(ti.c.state == TaskState.DEFERRED, ti.c.trigger_timeout <= now)
                .limit(TIMEOUT_BATCH)
            ).all()  # fmt: skip
        done = 0
        for r in rows:
            error = (
                f"trigger {r.trigger_id} ({r.classpath}) did not fire before the deferral's "
                f"timeout at {r.trigger_timeout.isoformat()}"
            )
            state = self._fail_attempt(  # type: ignore[attr-defined]
                r.id,
                r.try_number,
                None,
                error,
                None,
                now,
                try_state="failed",
                extra=and_(ti.c.trigger_id == r.trigger_id, ti.c.trigger_timeout <= now),
                from_state=TaskState.DEFERRED,
                quiet=True,
            )
            if state is not None:
                done += 1
        if rows:
            with self.write() as conn:
                conn.execute(delete(tr).where(tr.c.id.in_([r.trigger_id for r in rows])))
        return done

    def sweep_triggers(self) -> int:
        """Delete triggers no deferred instance waits on any more (its instance was
        cleared, marked, cancelled or failed meanwhile); how many."""
        waiting = select(ti.c.trigger_id).where(
            ti.c.state == TaskState.DEFERRED, ti.c.trigger_id.is_not(None)
        )
        with self.write() as conn:
            return conn.execute(delete(tr).where(tr.c.id.not_in(waiting))).rowcount

    def trigger_holders(self, ids: list[int]) -> dict[int, str | None]:
        with self.read() as conn:
            return dict(
                conn.execute(select(tr.c.id, tr.c.triggerer_id).where(tr.c.id.in_(ids))).all()
            )

    def deferred_instances(
        self, *, dag_id: str | None = None, run_id: str | None = None, limit: int = 500
    ) -> list[DeferredRecord]:
        """Deferred task instances with their triggers, oldest first."""
        q = (
            select(
                ti.c.id, ti.c.dag_id, ti.c.run_id, ti.c.task_id, ti.c.map_index,
                ti.c.try_number, ti.c.trigger_id, ti.c.trigger_timeout, tr.c.classpath,
                tr.c.created_at, tr.c.triggerer_id, tr.c.lease_expires_at,
            )
            .join(tr, tr.c.id == ti.c.trigger_id)
            .where(ti.c.state == TaskState.DEFERRED)
            .order_by(tr.c.created_at, ti.c.id)
            .limit(limit)
        )  # fmt: skip
        if dag_id is not None:
            q = q.where(ti.c.dag_id == dag_id)
        if run_id is not None:
            q = q.where(ti.c.run_id == run_id)
        with self.read() as conn:
            return [
                DeferredRecord(
                    r.id,
                    r.dag_id,
                    r.run_id,
                    r.task_id,
                    r.map_index,
                    r.try_number,
                    r.trigger_id,
                    r.classpath,
                    r.created_at,
                    r.trigger_timeout,
                    r.triggerer_id,
                    r.lease_expires_at,
                )  # fmt: skip
                for r in conn.execute(q)
            ]

    def count_deferred(self) -> int:
        from sqlalchemy import func

        with self.read() as conn:
            return conn.execute(
                select(func.count()).where(ti.c.state == TaskState.DEFERRED)
            ).scalar_one()


def _events_of(conn: Connection, ti_ids: list[int], now: datetime, kind: str, text: str) -> None:
    rows = conn.execute(
        select(ti.c.dag_id, ti.c.run_id, ti.c.task_id, ti.c.try_number, ti.c.map_index).where(
            ti.c.id.in_(ti_ids)
        )
    ).all()
    conn.execute(
        insert(m.events),
        [
            {
                "at": now,
                "kind": kind,
                "message": f"try {r.try_number}: {text}",
                "dag_id": r.dag_id,
                "run_id": r.run_id,
                "task_id": r.task_id,
                "try_number": r.try_number,
                "map_index": r.map_index if r.map_index >= 0 else None,
            }
            for r in rows
        ],
    )
