"""Recording successful tries, and releasing what they unblock in the same transaction.

A success is a write fenced on (id, try_number, owner, state='running'). In the same
transaction, with the run's row locked first (``FOR UPDATE`` on PostgreSQL, the
writer lock on SQLite; run before task instances, as every transition does), the
finished task's direct downstream tasks that are now certainly releasable move
``scheduled -> queued`` set-based. The scheduler's ``release_ready`` / ``finish_runs`` stay the general path
(every trigger rule, skips, failures); this fast path only takes decisions those
would take identically (see :mod:`orchestrator.store.release`), so a worker needs no
scheduler round trip between a task and its downstream.

>>> store.finish_success(claim, '{"rows": 3}', now)            # doctest: +SKIP
True
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select, update

from orchestrator.states import RunState, TaskState
from orchestrator.store import models as m
from orchestrator.store.base import StoreBase, record_event
from orchestrator.store.records import Claim
from orchestrator.store.release import release_after_success
from orchestrator.store.task_store import _close_try, _fence, _stale

log = logging.getLogger(__name__)
ti = m.task_instances


@dataclass(frozen=True)
class Finished:
    """What one recorded success did. ``recorded`` is False if it was fenced out."""

    recorded: bool
    released: int = 0  # downstream tasks queued in the same transaction
    needs_scheduler: bool = False  # something is left that only the scheduler decides


class FinishStore(StoreBase):
    def finish_success(
        self,
        claim: Claim,
        result: str | None,
        now: datetime,
        *,
        outcome: list[Finished] | None = None,
    ) -> bool:
        """Record a successful try. False (and a loud log line) if the lease was lost.

        ``outcome``, if given, receives the :class:`Finished` (what was released).

        A branch task's result names the direct downstream tasks to follow; the others
        are skipped in the same transaction (compare-and-set on ``scheduled``), and
        release_ready then propagates the skips by trigger rule. A branch result that
        names no direct downstream task fails the try instead.
        """
        done = self.finish_successes([(claim, result, now)])[0]
        if outcome is not None:
            outcome.append(done)
        return done.recorded

    def finish_successes(self, items: list[tuple[Claim, str | None, datetime]]) -> list[Finished]:
        """Record several successful tries in one transaction (one commit), in order.

        Each is fenced on its own: a stale one changes nothing and is logged, the
        others are recorded. All or none are committed.
        """
        out: list[Finished | None] = [None] * len(items)
        prepared = []
        for i, (claim, result, now) in enumerate(items):
            spec = self.spec(claim.dag_id, claim.version_hash)  # type: ignore[attr-defined]
            task = spec.tasks.get(claim.task_id)
            skip: list[str] | None = None
            if task is not None and task.branch:
                try:
                    chosen = spec.branch_targets(claim.task_id, result)
                except ValueError as exc:
                    self.finish_failure(claim, str(exc), None, now)  # type: ignore[attr-defined]
                    out[i] = Finished(recorded=False, needs_scheduler=True)
                    continue
                skip = [d for d in spec.downstream[claim.task_id] if d not in chosen]
            prepared.append((i, claim, result, now, spec, skip))
        if prepared:
            with self.write() as conn:
                runs = self._lock_runs_of(conn, {p[1].run_id for p in prepared})
                for i, claim, result, now, spec, skip in prepared:
                    out[i] = self._record_success(
                        conn, runs.get(claim.run_id), claim, result, now, spec, skip
                    )
        return [o if o is not None else Finished(recorded=False) for o in out]

    def _lock_runs_of(self, conn: Connection, run_ids: set[str]) -> dict[str, object]:
        """Lock the runs (id order) and read what the fast path needs about them."""
        r, d = m.dag_runs, m.dags
        q = (
            select(r.c.id, r.c.run_id, r.c.dag_id, r.c.state, d.c.is_paused)
            .join(d, d.c.dag_id == r.c.dag_id, isouter=True)
            .where(r.c.run_id.in_(sorted(run_ids)))
            .order_by(r.c.id)
        )
        if self.is_postgres:
            # rows come back locked, in id order, and as they are under the lock (on
            # SQLite the write transaction's lock already serialises writers)
            q = q.with_for_update(of=r)
        return {row.run_id: row for row in conn.execute(q)}

    def _record_success(
        self,
        conn: Connection,
        run: object,
        claim: Claim,
        result: str | None,
        now: datetime,
        spec: object,
        skip: list[str] | None,
    ) -> Finished:
        done = conn.execute(
            update(ti)
            .where(*_fence(claim))
            .values(state=TaskState.SUCCESS, end_date=now, result=result, error=None)
        ).rowcount
        if not done:
            _stale(conn, claim, now)
            return Finished(recorded=False)
        _close_try(conn, claim.ti_id, claim.try_number, "success", now, 0, None)
        if run is None:  # cannot happen while the task instance exists
            return Finished(recorded=True, needs_scheduler=True)
        if skip is not None:
            skipped = (
                conn.execute(
                    update(ti)
                    .where(
                        ti.c.run_pk == run.id,  # type: ignore[attr-defined]
                        ti.c.task_id.in_(skip),
                        ti.c.state == TaskState.SCHEDULED,
                    )
                    .values(state=TaskState.SKIPPED, end_date=now)
                    .returning(ti.c.task_id)
                )
                .scalars()
                .all()
            )
            followed = [d for d in spec.downstream[claim.task_id] if d not in skip]  # type: ignore[attr-defined]
            record_event(
                conn,
                now,
                "branch_followed",
                f"followed {', '.join(followed) or 'nothing'}; "
                f"skipped {', '.join(sorted(skipped)) or 'nothing'}",
                dag_id=claim.dag_id,
                run_id=claim.run_id,
                task_id=claim.task_id,
                try_number=claim.try_number,
            )
        active = run.state == RunState.RUNNING and run.is_paused is False  # type: ignore[attr-defined]
        if not active:
            return Finished(recorded=True, needs_scheduler=True)
        released, needs = release_after_success(
            conn,
            spec,  # type: ignore[arg-type]
            run.id,  # type: ignore[attr-defined]
            claim.task_id,
            now,
        )
        if skip:
            needs = True  # skips propagate by trigger rule: the scheduler's job
        if not spec.downstream[claim.task_id]:  # type: ignore[attr-defined]
            needs = True  # a leaf: the run may be finished (the scheduler's finish_runs)
        return Finished(recorded=True, released=released, needs_scheduler=needs)
