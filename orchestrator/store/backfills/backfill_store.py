"""Backfills: a stored date range of one DAG whose runs the scheduler starts.

``create_backfill`` writes the backfill record and its runs (run type ``backfill``)
in one transaction; existing runs of those fire times are left alone, or cleared
(``rerun_failed``: failed and cancelled ones; ``reset``: every finished one) and
adopted by the backfill. The scheduler starts a backfill's queued runs within the
backfill's own ``max_active_runs``, oldest first (newest first with ``reverse``), and
marks the backfill ``done`` once none of its runs is active. ``cancel_backfill``
cancels its queued runs; running ones finish.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import Connection, func, insert, select, update

from orchestrator.authoring.spec import DagSpec, validate_conf
from orchestrator.errors import NotFoundError
from orchestrator.states import RUN_ACTIVE, RUN_FINISHED, TASK_FINISHED, RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, lock_runs, record_event
from orchestrator.store.core.records import BackfillRecord
from orchestrator.store.runs.run_progress import cancel_run_in
from orchestrator.store.runs.run_rows import insert_runs
from orchestrator.store.tasks.expansion import collapse_locked
from orchestrator.store.tasks.xcoms import delete_xcoms_of

BATCH = 1000  # new runs per INSERT (and per progress report) when creating a backfill

b = m.backfills
r = m.dag_runs


def clear_run_in(
    conn: Connection,
    spec: DagSpec,
    run_pk: int,
    run_id: str,
    now: datetime,
    why: str,
    *,
    actor: str | None = None,
    **extra,
) -> bool:
    """Reset a finished run and all its task instances, so it runs again (queued)."""
    ti = m.task_instances
    done = conn.execute(
        update(r)
        .where(r.c.id == run_pk, r.c.state.in_(list(RUN_FINISHED)))
        .values(state=RunState.QUEUED, start_date=None, end_date=None, **extra)
    ).rowcount
    if not done:
        return False
    by_tries: dict[int, list[str]] = {}
    for t in spec.tasks.values():
        by_tries.setdefault(t.max_tries, []).append(t.task_id)
    # issue 25: the values the finished instances' tries pushed go with them
    finished = ti.c.run_pk == run_pk, ti.c.state.in_(list(TASK_FINISHED))
    delete_xcoms_of(conn, select(ti.c.id).where(*finished))
    for tries, task_ids in sorted(by_tries.items()):
        conn.execute(
            update(ti)
            .where(
                ti.c.run_pk == run_pk,
                ti.c.task_id.in_(task_ids),
                ti.c.state.in_(list(TASK_FINISHED)),
            )
            .values(
                state=TaskState.SCHEDULED,
                owner=None,
                lease_expires_at=None,
                ready_at=None,
                start_date=None,
                end_date=None,
                error=None,
                result=None,
                max_tries=ti.c.try_number + tries,  # a fresh set of tries
                # issue 30: not resuming a deferral of an earlier try
                next_method=None,
                next_kwargs=None,
                trigger_id=None,
                trigger_timeout=None,
                lost_tries=0,
            )
        )
    for task_id in sorted(spec.mapped_tasks):  # expanded again when released (issue 14)
        collapse_locked(conn, run_pk, task_id)
    record_event(conn, now, "run_cleared", why, dag_id=spec.dag_id, run_id=run_id, actor=actor)
    return True


class BackfillStore(StoreBase):
    def rerun_run(self, run_id: str, now: datetime, why: str, actor: str | None = None) -> bool:
        """Reset the finished run ``run_id`` and all its task instances so it runs again
        (queued); False if it is not finished (issue 26: TriggerDagRunOperator's
        ``reset_dag_run``)."""
        run = self.get_run(run_id)  # type: ignore[attr-defined]
        spec = self.spec(run.dag_id, run.version_hash)  # type: ignore[attr-defined]
        with self.write() as conn:
            lock_runs(conn, [run.id], self.is_postgres)
            return clear_run_in(conn, spec, run.id, run_id, now, why, actor=actor)

    def create_backfill(
        self,
        dag_id: str,
        fire_times: list[tuple[datetime, tuple[datetime, datetime]]],
        now: datetime,
        *,
        start: datetime,
        end: datetime,
        max_active_runs: int,
        reverse: bool = False,
        rerun_failed: bool = False,
        reset: bool = False,
        triggered_by: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        conf: dict | None = None,
    ) -> tuple[BackfillRecord, dict[str, int]]:
        """Store a backfill and create (or clear) its runs, atomically.

        Returns the record and counts: ``created``, ``cleared``, ``kept`` (existing
        runs left alone). New runs are inserted ``BATCH`` at a time, and after each
        batch ``progress(done, total)`` is called (the CLI's "creating runs" line).
        ``triggered_by`` (who asked) is stored on the new runs and named in the events.
        ``conf`` (issue 25) is the new runs' conf, checked against the DAG's params
        first (ConfigError naming the param and the rule; nothing is stored); runs it
        clears keep their own.
        """

        dag = self.get_dag(dag_id)  # type: ignore[attr-defined]
        spec = self.spec(dag_id, dag.version_hash)  # type: ignore[attr-defined]
        conf = conf or {}
        validate_conf(spec, conf, max_bytes=self.max_conf_bytes)  # type: ignore[attr-defined]
        counts = {"created": 0, "cleared": 0, "kept": 0}
        clear_states = set(RUN_FINISHED) if reset else {RunState.FAILED, RunState.CANCELLED}
        with self.write() as conn:
            bid = conn.execute(
                insert(b)
                .values(
                    dag_id=dag_id,
                    range_start=start,
                    range_end=end,
                    max_active_runs=max_active_runs,
                    reverse=reverse,
                    state="running",
                    total=len(fire_times),
                    created_at=now,
                )
                .returning(b.c.id)
            ).scalar_one()
            existing = {
                row.logical_date: row
                for row in conn.execute(
                    select(r.c.id, r.c.run_id, r.c.state, r.c.logical_date).where(
                        r.c.dag_id == dag_id,
                        r.c.run_type.in_(["scheduled", "backfill"]),
                        r.c.logical_date >= start,
                        r.c.logical_date <= end,
                    )
                )
            }
            by_whom = f" by {triggered_by}" if triggered_by else ""
            for first in range(0, len(fire_times), BATCH):
                new = []
                for when, interval in fire_times[first : first + BATCH]:
                    old = existing.get(when)
                    if old is None:
                        new.append((when, interval))
                    elif (rerun_failed or reset) and old.state in clear_states:
                        lock_runs(conn, [old.id], self.is_postgres)
                        why = (
                            f"cleared by backfill {bid} ({'reset' if reset else 'rerun failed'})"
                            + by_whom
                        )
                        ok = clear_run_in(
                            conn,
                            spec,
                            old.id,
                            old.run_id,
                            now,
                            why,
                            actor=triggered_by,
                            backfill_id=bid,
                        )
                        counts["cleared" if ok else "kept"] += 1
                    else:
                        counts["kept"] += 1
                created = insert_runs(
                    conn,
                    spec,
                    dag.version_hash,
                    run_type="backfill",
                    fire_times=new,
                    conf=conf,
                    now=now,
                    backfill_id=bid,
                    triggered_by=triggered_by,
                )
                counts["created"] += len(created)
                counts["kept"] += len(new) - len(created)
                if progress is not None:
                    progress(min(first + BATCH, len(fire_times)), len(fire_times))
            record_event(
                conn,
                now,
                "backfill_created",
                f"backfill {bid} of {len(fire_times)} fire time(s) from {start.isoformat()} "
                f"to {end.isoformat()}: {counts['created']} created, {counts['cleared']} "
                f"cleared, {counts['kept']} existing left alone{by_whom}",
                dag_id=dag_id,
                actor=triggered_by,
            )
        return self.get_backfill(bid), counts

    def get_backfill(self, backfill_id: int) -> BackfillRecord:
        with self.read() as conn:
            row = conn.execute(select(b).where(b.c.id == backfill_id)).first()
            if row is None:
                raise NotFoundError(f"no backfill with id {backfill_id}")
            states = dict(
                conn.execute(
                    select(r.c.state, func.count())
                    .where(r.c.backfill_id == backfill_id)
                    .group_by(r.c.state)
                ).all()
            )
        return BackfillRecord.from_row(row, states)

    def list_backfills(self, dag_id: str | None = None, *, active: bool = False) -> list:
        q = select(b.c.id).order_by(b.c.id.desc())
        if dag_id is not None:
            q = q.where(b.c.dag_id == dag_id)
        if active:
            q = q.where(b.c.state == "running")
        with self.read() as conn:
            ids = conn.execute(q).scalars().all()
        return [self.get_backfill(i) for i in ids]

    def cancel_backfill(self, backfill_id: int, now: datetime, *, who: str | None = None) -> int:
        """Cancel a backfill: its queued runs are cancelled, running ones finish.

        Returns how many runs were cancelled; raises NotFoundError for an unknown id.
        """

        backfill = self.get_backfill(backfill_id)
        with self.write() as conn:
            done = conn.execute(
                update(b)
                .where(b.c.id == backfill_id, b.c.state == "running")
                .values(state="cancelled", end_date=now)
            ).rowcount
            if not done:
                return 0
            queued = conn.execute(
                select(r.c.id, r.c.run_id).where(
                    r.c.backfill_id == backfill_id, r.c.state == RunState.QUEUED
                )
            ).all()
            why = f"backfill {backfill_id} cancelled"
            n = sum(
                cancel_run_in(conn, x.id, backfill.dag_id, x.run_id, now, why, actor=who)
                for x in queued
            )
            record_event(
                conn,
                now,
                "backfill_cancelled",
                f"{why}: {n} queued run(s) cancelled",
                dag_id=backfill.dag_id,
                actor=who,
            )
        return n

    def finish_backfills(self, now: datetime) -> list[int]:
        """Mark running backfills with no active run left as done."""
        active = (
            select(r.c.id)
            .where(r.c.backfill_id == b.c.id, r.c.state.in_(list(RUN_ACTIVE)))
            .exists()
        )
        with self.read() as conn:
            rows = conn.execute(
                select(b.c.id, b.c.dag_id).where(b.c.state == "running", ~active)
            ).all()
        out = []
        for row in rows:
            with self.write() as conn:
                done = conn.execute(
                    update(b)
                    .where(b.c.id == row.id, b.c.state == "running", ~active)
                    .values(state="done", end_date=now)
                ).rowcount
                if done:
                    record_event(
                        conn, now, "backfill_done", f"backfill {row.id} done", dag_id=row.dag_id
                    )
                    out.append(row.id)
        return out
