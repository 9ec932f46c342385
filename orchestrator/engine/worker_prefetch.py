"""Claims made ahead (``worker_prefetch``): while tries are short, a worker claims beyond
its free task processes and starts those claims as processes free; one that waits too
long behind tries that turned out long goes back (``store.unclaim``)."""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


# claim ahead only while tries are this short, and give a claim back (store.unclaim)
# that has not started this long after it was claimed
PREFETCH_SHORT_SECONDS = 0.25
BACKLOG_SECONDS = 1.0


class Prefetching:
    """The backlog of claims made ahead of ``Worker``'s free task processes."""

    def _start_backlog(self) -> None:
        """Hand claims made ahead (``worker_prefetch``) to the free task processes; one
        whose lease could not be confirmed in time (``_self_fence``'s margin) is not
        started: the lease may have expired and another worker may run it."""
        limit = self._fence_margin()
        while self._backlog and len(self._busy) < self.concurrency and not self.draining:
            claim, claimed = self._backlog.pop(0)
            if time.monotonic() - max(claimed, self._backlog_confirmed) > limit:
                log.error(
                    "cannot confirm the lease of dag_id=%s run_id=%s task_id=%s try=%s "
                    "claimed ahead: not starting it",
                    claim.dag_id, claim.run_id, claim.task_id, claim.try_number,
                )  # fmt: skip
                continue
            self._dispatch(claim, self.clock.now())

    def _give_back(self, every: bool = False) -> None:
        """Give back (``store.unclaim``) the claims made ahead that have waited over
        ``BACKLOG_SECONDS`` while every process runs a try that turned out long, or
        ``every`` one (draining). A wait for any other reason (this worker's own round
        stuck on a lock) is not given back: the next free process starts it. If the
        database cannot take it, they are dropped once their lease can no longer be
        trusted: the lease expires and the scheduler requeues them."""
        mono = time.monotonic()
        if not every and (
            len(self._busy) < self.concurrency
            or any(mono - s.started < PREFETCH_SHORT_SECONDS for s in self._busy)
        ):
            return  # a process is free, or frees soon
        old = [(c, t) for c, t in self._backlog if every or mono - t > BACKLOG_SECONDS]
        if not old:
            return
        try:
            self.store.unclaim([c for c, _ in old], self.clock.now())
        except Exception as exc:  # noqa: BLE001 - the database may be down: retry later
            log.warning("cannot give back %d claim(s) yet (%s)", len(old), str(exc)[:200])
            limit = self._fence_margin()
            old = [(c, t) for c, t in old if mono - t > limit]
        gone = {id(c) for c, _ in old}
        self._backlog = [(c, t) for c, t in self._backlog if id(c) not in gone]
        if old:
            self._claim_hint = True  # claimable again: by this worker too, once it is free
            self._short = False  # the tries turned out long: claim no more ahead for now

    def _free_slots(self) -> int:
        """How many task instances a claim may take now: the free task processes and,
        while tries are short, ``worker_prefetch`` more (less what is claimed ahead)."""
        if self.draining:
            return 0
        ahead = self.prefetch if self._short else 0
        return max(0, self.concurrency + ahead - len(self._busy) - len(self._backlog))
