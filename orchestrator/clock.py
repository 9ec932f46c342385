"""Clocks. Only the outermost loops read a clock; everything below takes ``now``."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol

STAMP_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def stamp(value: datetime) -> str:
    """A time as every page and message shows it: ``2026-12-01 19:46:32 UTC``.

    >>> stamp(datetime(2026, 12, 1, 19, 46, 32, 500, tzinfo=UTC))
    '2026-12-01 19:46:32 UTC'
    """
    return value.astimezone(UTC).strftime(STAMP_FORMAT)


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """Wall-clock time, timezone-aware UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock tests move by hand.

    >>> clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    >>> clock.advance(seconds=30).isoformat()
    '2026-01-01T00:00:30+00:00'
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        step = delta if delta is not None else timedelta(**kwargs)
        with self._lock:
            self._now += step
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when.astimezone(UTC)


def utc(value: datetime) -> datetime:
    """Return ``value`` as aware UTC; naive values are rejected."""
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value.isoformat()} where an aware one is needed")
    return value.astimezone(UTC)
