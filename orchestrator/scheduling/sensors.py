"""When a sensor pokes next, and when it has waited long enough: pure decisions.

A sensor's options are stored with its task (``TaskSpec.sensor``) as seconds. After a
poke that found its condition unmet, :func:`next_poke` says when to poke again (its
``poke_interval``, doubled after every unmet poke with ``exponential_backoff`` up to
``max_wait``, and never later than the timeout), or None when the timeout, counted
from the first poke of the try, has passed::

    >>> policy = SensorPolicy.of({"poke_interval": 30, "timeout": 3600})
    >>> next_poke(policy, first_poke=t0, pokes=1, now=t0)        # doctest: +SKIP
    t0 + 30 s
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

MODES = ("reschedule", "poke")
DEFAULT_TIMEOUT = timedelta(days=7)  # Airflow's default


@dataclass(frozen=True)
class SensorPolicy:
    poke_interval: timedelta
    timeout: timedelta
    mode: str = "reschedule"
    exponential_backoff: bool = False
    max_wait: timedelta | None = None
    soft_fail: bool = False

    @classmethod
    def of(cls, data: dict[str, Any]) -> SensorPolicy:
        max_wait = data.get("max_wait")
        return cls(
            poke_interval=timedelta(seconds=data["poke_interval"]),
            timeout=timedelta(seconds=data.get("timeout", DEFAULT_TIMEOUT.total_seconds())),
            mode=data.get("mode", "reschedule"),
            exponential_backoff=bool(data.get("exponential_backoff", False)),
            max_wait=None if max_wait is None else timedelta(seconds=max_wait),
            soft_fail=bool(data.get("soft_fail", False)),
        )

    def interval_after(self, pokes: int) -> timedelta:
        """The wait after the ``pokes``-th unmet poke (1 for the first)."""
        if not self.exponential_backoff:
            return self.poke_interval
        cap = self.max_wait if self.max_wait is not None else self.timeout
        # in seconds, capped before it becomes a timedelta (which overflows past 10^9 days)
        step = self.poke_interval.total_seconds() * 2.0 ** min(max(pokes - 1, 0), 64)
        return timedelta(seconds=min(step, cap.total_seconds()))

    def deadline(self, first_poke: datetime) -> datetime:
        return first_poke + self.timeout


def next_poke(
    policy: SensorPolicy,
    *,
    first_poke: datetime,
    pokes: int,
    now: datetime,
    wake_at: datetime | None = None,
) -> datetime | None:
    """When to poke again after the ``pokes``-th unmet poke; None: timed out.

    ``wake_at`` (a time sensor's target) brings the next poke forward to that time.
    The last poke is at the deadline itself, so a condition met just in time counts.
    """
    deadline = policy.deadline(first_poke)
    if now >= deadline:
        return None
    at = now + policy.interval_after(pokes)
    if wake_at is not None:
        at = min(at, max(wake_at, now))
    return min(at, deadline)
