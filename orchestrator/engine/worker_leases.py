"""The worker's leases: one heartbeat for every lease it holds, the self-fence that stops
a try whose lease could not be confirmed in time, and the tries' own timeouts."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

log = logging.getLogger(__name__)


class LeaseKeeping:
    """Heartbeats, the self-fence and timeouts of ``Worker``'s running tries."""

    def heartbeat(self, now: datetime) -> None:
        held = {(s.claim.ti_id, s.claim.try_number) for s in self._busy if s.claim}
        held |= {(c.ti_id, c.try_number) for c, _ in self._backlog}
        self._last_heartbeat = time.monotonic()
        started = time.monotonic()
        kept = self.store.heartbeat(self.id, held, now, self.lease)
        if not held:
            return
        for slot in self._busy:
            if slot.claim and (slot.claim.ti_id, slot.claim.try_number) in kept:
                slot.confirmed = started
        # a prefetched claim whose lease was lost is not started
        self._backlog = [(c, t) for c, t in self._backlog if (c.ti_id, c.try_number) in kept]
        self._backlog_confirmed = started
        for slot in list(self._busy):
            if slot.claim and (slot.claim.ti_id, slot.claim.try_number) not in kept:
                log.error(
                    "lease lost for dag_id=%s run_id=%s task_id=%s try=%s: stopping it",
                    slot.claim.dag_id,
                    slot.claim.run_id,
                    slot.claim.task_id,
                    slot.claim.try_number,
                )
                self._busy.remove(slot)
                slot.kill()

    def _fence_margin(self) -> float:
        """Seconds a lease is trusted unconfirmed: a fifth of it is kept in hand."""
        return self.settings.lease_seconds * 0.8

    def _self_fence(self) -> None:
        """Stop tries whose lease could not be confirmed in time, before it can expire.

        If heartbeats fail (database unreachable, network cut), the scheduler will soon
        reap these leases and another worker will run the tasks: this worker must not
        still be running them then. The margin is a fifth of the lease.
        """
        limit = self._fence_margin()
        mono = time.monotonic()
        for slot in list(self._busy):
            if slot.claim is not None and mono - slot.confirmed > limit:
                log.error(
                    "cannot confirm the lease of dag_id=%s run_id=%s task_id=%s try=%s for "
                    "%.0fs: stopping it before the lease expires",
                    slot.claim.dag_id,
                    slot.claim.run_id,
                    slot.claim.task_id,
                    slot.claim.try_number,
                    mono - slot.confirmed,
                )
                self._busy.remove(slot)
                slot.kill()

    def _enforce_timeouts(self, now: datetime) -> None:
        mono = time.monotonic()
        for slot in list(self._busy):
            if slot.deadline is not None and mono > slot.deadline and slot.claim is not None:
                claim = slot.claim
                self._busy.remove(slot)
                slot.kill()
                limit = timedelta(seconds=round(slot.timeout or 0, 3))
                message = f"timed out after {limit} and was killed"
                self._outbox.append((claim, False, message, None, "timeout", now))
        self._flush()
