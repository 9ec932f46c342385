"""``dagrun_timeout``: a run still running at its deadline (the DAG version's
``dagrun_timeout`` after the run started, or after it was last cleared or retried) fails, in one transaction under the run's lock (issue 14).

Its running task instances are failed and their tries closed as ``failed``: the
worker's next heartbeat finds the lease gone and kills the try, and the try's late
report is fenced out (the usual (id, try, owner, state='running') fence: the instance
is no longer running). Instances that had not started (scheduled, queued,
up_for_retry) are cancelled. The run's ``run_failed`` event raises the DAG's failure
alerts, as any failed run does. Called by the scheduler's tick.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import func, select, update

from orchestrator.states import TASK_UNFINISHED, RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, lock_runs, record_event

log = logging.getLogger(__name__)
ti, r, tries, e = m.task_instances, m.dag_runs, m.task_tries, m.events
RESTARTS = ("task_cleared", "run_cleared", "task_retried")  # events that run a run again
NOT_STARTED = sorted(TASK_UNFINISHED - {TaskState.RUNNING})  # scheduled, queued, ...


class RunTimeoutStore(StoreBase):
    def time_out_runs(self, now: datetime) -> list[str]:
        """Fail every running run past its ``dagrun_timeout``; the run ids failed."""
        with self.read() as conn:
            versions = conn.execute(
                select(r.c.dag_id, r.c.version_hash, func.min(r.c.start_date))
                .where(r.c.state == RunState.RUNNING)
                .group_by(r.c.dag_id, r.c.version_hash)
            ).all()
            due = []
            for dag_id, version, oldest in versions:
                try:
                    timeout = self.spec(dag_id, version).dagrun_timeout  # type: ignore[attr-defined]
                except Exception:  # noqa: BLE001 - a version that cannot be read: no timeout
                    continue
                if timeout is None or oldest is None or oldest + timeout > now:
                    continue
                due += [
                    (row.id, row.run_id, dag_id, row.start_date, timeout)
                    for row in conn.execute(
                        select(r.c.id, r.c.run_id, r.c.start_date).where(
                            r.c.dag_id == dag_id,
                            r.c.version_hash == version,
                            r.c.state == RunState.RUNNING,
                            r.c.start_date <= now - timeout,
                        )
                    )
                ]
            # a run cleared or retried since it started is timed from then
            late = []
            for pk, run_id, dag_id, started, timeout in sorted(due):
                again = conn.execute(
                    select(func.max(e.c.at)).where(
                        e.c.dag_id == dag_id, e.c.run_id == run_id, e.c.kind.in_(RESTARTS)
                    )
                ).scalar()
                deadline = max(started, again or started) + timeout
                if deadline <= now:
                    late.append((pk, run_id, dag_id, deadline, timeout))
        failed = []
        for pk, run_id, dag_id, deadline, timeout in late:
            if self._time_out(pk, run_id, dag_id, deadline, timeout, now):
                failed.append(run_id)
        return failed

    def _time_out(
        self, pk: int, run_id: str, dag_id: str, deadline: datetime, timeout, now: datetime
    ) -> bool:
        why = f"dagrun_timeout of {timeout} passed at {deadline.isoformat()}"
        with self.write() as conn:
            lock_runs(conn, [pk], self.is_postgres)
            done = conn.execute(
                update(r)
                .where(r.c.id == pk, r.c.state == RunState.RUNNING)
                .values(state=RunState.FAILED, end_date=now)
            ).rowcount
            if not done:
                return False  # finished (or cleared) meanwhile
            running = select(ti.c.id).where(ti.c.run_pk == pk, ti.c.state == TaskState.RUNNING)
            conn.execute(
                update(tries)
                .where(tries.c.ti_id.in_(running.scalar_subquery()), tries.c.state == "running")
                .values(state="failed", end_date=now, error=why)
            )
            conn.execute(
                update(ti)
                .where(ti.c.run_pk == pk, ti.c.state == TaskState.RUNNING)
                .values(state=TaskState.FAILED, end_date=now, lease_expires_at=None, error=why)
            )
            waiting = select(ti.c.id).where(  # and a deferred try (issue 30)
                ti.c.run_pk == pk, ti.c.state.in_((TaskState.UP_FOR_RESCHEDULE, TaskState.DEFERRED))
            )
            conn.execute(  # a sensor's try between pokes is open too, as cancel_run has it
                update(tries)
                .where(
                    tries.c.ti_id.in_(waiting.scalar_subquery()),
                    tries.c.state.in_((TaskState.UP_FOR_RESCHEDULE, TaskState.DEFERRED)),
                )
                .values(state="cancelled", end_date=now, error=why)
            )
            conn.execute(
                update(ti)
                .where(ti.c.run_pk == pk, ti.c.state.in_(NOT_STARTED))
                .values(state=TaskState.CANCELLED, end_date=now, lease_expires_at=None)
            )
            record_event(conn, now, "run_timed_out", why, dag_id=dag_id, run_id=run_id)
            record_event(
                conn, now, "run_failed", f"run failed: {why}", dag_id=dag_id, run_id=run_id
            )
        log.warning("run timed out dag_id=%s run_id=%s: %s", dag_id, run_id, why)
        return True
