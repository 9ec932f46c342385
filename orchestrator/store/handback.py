"""Handing a claimed task back: a worker shutting down returns what it cannot finish."""

from __future__ import annotations

from datetime import datetime

from orchestrator.store.base import StoreBase
from orchestrator.store.records import Claim
from orchestrator.store.task_store import HANDED_BACK, LOST


class HandbackStore(StoreBase):
    def hand_back(self, claim: Claim, now: datetime) -> bool:
        """Queue a claimed task again at once; the interrupted try is not held against it.

        The try is recorded ``lost`` (reason ``handed_back``), like a try whose lease
        expired: it does not spend the task's retries, up to its ``max_lost_tries``
        (then it counts as a failed try). Fenced like every write after a claim: False
        if the lease was already lost.
        """
        message = f"worker {claim.owner} shut down before the try finished; handed back"
        state = self._fail_attempt(  # type: ignore[attr-defined]
            claim.ti_id,
            claim.try_number,
            claim.owner,
            message,
            None,
            now,
            try_state=LOST,
            quiet=True,
            lost=HANDED_BACK,
        )
        return state is not None
