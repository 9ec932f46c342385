"""Transitions a person asks for in the web UI: mark a task instance success or failed.

Each is a compare-and-set on the state read in the same write transaction, recorded
in the event log. A running try is closed as ``marked_<state>``; its worker finds out
at its next heartbeat (the lease is gone) and any late report is fenced out.

>>> store.mark_task(run_id, "load", "success", now)   # doctest: +SKIP
'failed'
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update

from orchestrator.errors import NotFoundError, StateError
from orchestrator.states import RUN_FINISHED, RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, lock_runs, record_event

MARKABLE = frozenset({TaskState.SUCCESS, TaskState.FAILED})


class UiActionStore(StoreBase):
    def mark_task(
        self,
        run_id: str,
        task_id: str,
        state: str,
        now: datetime,
        *,
        who: str | None = None,
        map_index: int | None = None,
    ) -> str:
        """Set one task instance to ``success`` or ``failed``; returns its previous state.

        A finished run goes back to ``running`` so the scheduler re-decides it (releases
        what now may run, then finishes it again). Raises StateError if the task is
        already in ``state`` or its state changed under us; NotFoundError if unknown.
        """
        if state not in MARKABLE:
            raise StateError(f"a task can be marked success or failed, not {state!r}")
        ti, r = m.task_instances, m.dag_runs
        with self.write() as conn:
            run = conn.execute(
                select(r.c.id, r.c.dag_id, r.c.state).where(r.c.run_id == run_id)
            ).first()
            if run is None:
                raise NotFoundError(f"no run with run_id {run_id!r}")
            lock_runs(conn, [run.id], self.is_postgres)
            q = select(ti.c.id, ti.c.state, ti.c.try_number, ti.c.map_index).where(
                ti.c.run_pk == run.id, ti.c.task_id == task_id
            )
            if map_index is not None:  # one instance of a mapped task (issue 14)
                q = q.where(ti.c.map_index == map_index)
            row = conn.execute(q.order_by(ti.c.map_index).limit(1)).first()
            if row is None:
                raise NotFoundError(f"run {run_id!r} has no task {task_id!r}")
            if row.state == state:
                raise StateError(f"task {task_id!r} of {run_id} is {state} already")
            done = conn.execute(
                update(ti)
                .where(
                    ti.c.id == row.id, ti.c.state == row.state, ti.c.try_number == row.try_number
                )
                .values(state=state, end_date=now, owner=None, lease_expires_at=None)
            ).rowcount
            if not done:
                raise StateError(f"task {task_id!r} of {run_id} changed meanwhile; try again")
            conn.execute(
                update(m.task_tries)
                .where(
                    m.task_tries.c.ti_id == row.id,
                    # issue 15's sensors between pokes, issue 30's deferred tries
                    m.task_tries.c.state.in_(("running", "up_for_reschedule", "deferred")),
                )
                .values(state=f"marked_{state}", end_date=now, error=f"marked {state} by a user")
            )
            if run.state in RUN_FINISHED and run.state != RunState.CANCELLED:
                conn.execute(
                    update(r)
                    .where(r.c.id == run.id, r.c.state == run.state)
                    .values(state=RunState.RUNNING, end_date=None)
                )
            by = f" by {who}" if who else ""
            record_event(
                conn,
                now,
                f"task_marked_{state}",
                f"marked {state}{by} (was {row.state})",
                dag_id=run.dag_id,
                run_id=run_id,
                task_id=task_id,
                actor=who,
                map_index=row.map_index,
            )
        return str(row.state)
