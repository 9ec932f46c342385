"""Retry backoff: how long a failed try waits before the next one.

Pure code. The delay for the try after failed try ``n`` (1-based) is
``retry_delay * 2**(n-1)`` when exponential, capped at ``max_retry_delay``, then
"equal jitter" keeps it between half and all of that, so retries of many tasks that
failed together spread out. The jitter fraction is drawn once per idempotency key (not
per try), so it is reproducible and each task's delays never shrink from one try to the
next, even once they reach the cap.

>>> from datetime import timedelta
>>> p = RetryPolicy(retries=3, retry_delay=timedelta(seconds=10), jitter=False)
>>> [p.delay_after(n, "k").total_seconds() for n in (1, 2, 3)]
[10.0, 20.0, 40.0]
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 0
    retry_delay: timedelta = timedelta(seconds=30)
    exponential: bool = True
    max_retry_delay: timedelta = timedelta(hours=1)
    jitter: bool = True

    @classmethod
    def of(cls, task: Any) -> RetryPolicy:
        """The policy of a task or task spec (anything with the four retry attributes)."""
        return cls(
            retries=task.retries,
            retry_delay=task.retry_delay,
            exponential=task.retry_exponential,
            max_retry_delay=task.max_retry_delay,
        )

    @property
    def max_tries(self) -> int:
        return self.retries + 1

    def delay_after(self, failed_try: int, key: str) -> timedelta:
        base = self.retry_delay.total_seconds()
        if self.exponential:
            # a float power saturates at inf (then the cap) instead of overflowing
            base *= 2.0 ** min(max(failed_try - 1, 0), 1023)
        base = min(base, self.max_retry_delay.total_seconds())
        if self.jitter and base > 0:
            # One fraction per key: delay = base * (1 + u) / 2 grows with base, so a
            # task's delays never decrease, while different tasks still spread out.
            u = random.Random(f"retry-jitter:{key}").random()
            base = base * (1 + u) / 2
        return timedelta(seconds=base)
