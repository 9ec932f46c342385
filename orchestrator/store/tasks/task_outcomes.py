"""Outcomes a task chose itself: a skip (``raise Skip``, a shell task's
``skip_on_exit_code``) and a failure with no retry (``raise Fail``) (issue 14).

Both are fenced like every write after a claim (id, try, owner, state='running'): a
worker that lost its lease changes nothing and the stale write is recorded. A skip
moves the instance ``running -> skipped`` and closes the try as ``skipped``; its
downstream tasks then follow their trigger rules (the scheduler's release pass). A
``Fail`` is a failed try that is dead-lettered whatever retries are left
(:meth:`TaskStore._fail_attempt` with ``retry=False``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import select, update

from orchestrator.states import SKIPPED_TRY, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.core.records import Claim
from orchestrator.store.tasks.task_store import _close_try, _fence, _stale

log = logging.getLogger(__name__)
ti = m.task_instances


class TaskOutcomeStore(StoreBase):
    def finish_skip(
        self, claim: Claim, reason: str, exit_status: int | None, now: datetime
    ) -> str | None:
        """Record a try whose task skipped itself: ``running -> skipped``, fenced.

        Returns ``"skipped"``, or None if the write was fenced out (the lease was lost:
        the run timed out, the lease expired and was reaped, the task was cleared).
        """
        with self.write() as conn:
            done = conn.execute(
                update(ti)
                .where(*_fence(claim))
                .values(
                    state=TaskState.SKIPPED,
                    end_date=now,
                    owner=None,
                    lease_expires_at=None,
                    error=reason[-4000:],
                )
            ).rowcount
            if not done:
                row = conn.execute(select(ti).where(ti.c.id == claim.ti_id)).first()
                if row is not None:
                    _stale(conn, row, now, try_number=claim.try_number, owner=claim.owner)
                return None
            _close_try(conn, claim.ti_id, claim.try_number, SKIPPED_TRY, now, exit_status, reason)
            record_event(
                conn,
                now,
                "task_skipped",
                f"try {claim.try_number} skipped itself: {reason[:500]}",
                dag_id=claim.dag_id,
                run_id=claim.run_id,
                task_id=claim.task_id,
                try_number=claim.try_number,
            )
        log.info(
            "task_skipped dag_id=%s run_id=%s task_id=%s try=%s: %s",
            claim.dag_id, claim.run_id, claim.task_id, claim.try_number, reason[:200],
        )  # fmt: skip
        return str(TaskState.SKIPPED)
