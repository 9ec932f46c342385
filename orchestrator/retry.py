"""Retry backoff: how long a failed try waits before the next one.

Pure code. The delay for the try after failed try ``n`` (1-based) is
``retry_delay * 2**(n-1)`` when exponential, capped at ``max_retry_delay``, then
"equal jitter" keeps it between half and all of that, so retries of many tasks that
failed together spread out while each task's delays still never shrink. The jitter is
seeded by the idempotency key and try, so it is reproducible.

>>> from datetime import timedelta
>>> p = RetryPolicy(retries=3, retry_delay=timedelta(seconds=10), jitter=False)
>>> [p.delay_after(n, "k").total_seconds() for n in (1, 2, 3)]
[10.0, 20.0, 40.0]
"""

import random
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 0
    retry_delay: timedelta = timedelta(seconds=30)
    exponential: bool = True
    max_retry_delay: timedelta = timedelta(hours=1)
    jitter: bool = True

    @property
    def max_tries(self) -> int:
        return self.retries + 1

    def delay_after(self, failed_try: int, key: str) -> timedelta:
        base = self.retry_delay.total_seconds()
        if self.exponential:
            base *= 2 ** max(failed_try - 1, 0)
        base = min(base, self.max_retry_delay.total_seconds())
        if self.jitter and base > 0:
            rng = random.Random(f"{key}:{failed_try}")
            base = base / 2 + rng.uniform(0, base / 2)
        return timedelta(seconds=base)
