"""Handing a claimed task back: a worker shutting down returns what it cannot finish."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update

from orchestrator.states import TaskState
from orchestrator.store import models as m
from orchestrator.store.base import StoreBase, record_event
from orchestrator.store.records import Claim
from orchestrator.store.task_store import _close_try, _fence


class HandbackStore(StoreBase):
    def hand_back(self, claim: Claim, now: datetime) -> bool:
        """Queue a claimed task again at once; the interrupted try is not held against it.

        Fenced like every write after a claim: False if the lease was already lost.
        """
        ti = m.task_instances
        with self.write() as conn:
            done = conn.execute(
                update(ti)
                .where(*_fence(claim))
                .values(
                    state=TaskState.QUEUED,
                    owner=None,
                    lease_expires_at=None,
                    ready_at=now,
                    max_tries=ti.c.max_tries + 1,
                )
            ).rowcount
            if not done:
                return False
            message = f"worker {claim.owner} shut down before the try finished; handed back"
            _close_try(conn, claim.ti_id, claim.try_number, "handed_back", now, None, message)
            record_event(
                conn,
                now,
                "task_handed_back",
                message,
                dag_id=claim.dag_id,
                run_id=claim.run_id,
                task_id=claim.task_id,
                try_number=claim.try_number,
            )
        return True
