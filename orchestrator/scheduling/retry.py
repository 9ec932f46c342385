"""Retry backoff: how long a failed try waits before the next one.

Pure code. After failed try ``n`` (1-based) the base delay is ``retry_delay * 2**(n-1)``
when exponential (``retry_delay`` when not); the wait is that base plus a jitter of up to
the base again, capped at ``max_retry_delay``::

    wait = min(base * (1 + u), max_retry_delay)    with 0 <= u < 1

So ``retry_delay`` is the least a first retry waits (unless the cap is lower), as in
Airflow, which waits between the delay and twice it; jitter only ever adds, spreading out
the retries of many tasks that failed together. The jitter fraction ``u`` is drawn once per
idempotency key (not per try), so it is reproducible and each task's delays never shrink
from one try to the next, even once they reach the cap.

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
        if self.jitter and base > 0:
            # One fraction per key: base * (1 + u) grows with base, so a task's delays
            # never decrease, while different tasks still spread out.
            base *= 1 + random.Random(f"retry-jitter:{key}").random()
        return timedelta(seconds=min(base, self.max_retry_delay.total_seconds()))
