"""Pure display helpers used as Jinja filters (no Flask, no database).

>>> from datetime import datetime, UTC
>>> at = datetime(2026, 7, 1, 0, 30, tzinfo=UTC)
>>> in_zone(at, "Europe/Berlin")
'2026-07-01 02:30 CEST'
>>> utc(at)
'2026-07-01 00:30 UTC'
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# Every state a run or task instance can be in gets a CSS class ``state-<name>``;
# anything unknown falls back to ``state-unknown`` rather than inventing a class.
KNOWN_STATES = frozenset(
    {
        "queued",
        "scheduled",
        "running",
        "up_for_retry",
        "up_for_reschedule",  # a sensor between pokes (issue 15)
        "deferred",  # waiting for its trigger in a triggerer (issue 30)
        "success",
        "failed",
        "upstream_failed",
        "skipped",
        "cancelled",
        "lost",  # a try lost to infrastructure (lease expired, handed back)
    }
)


def in_zone(value: datetime | None, timezone: str, *, seconds: bool = False) -> str:
    """``value`` as wall time in ``timezone`` with its abbreviation; '' for None."""
    if value is None:
        return ""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    fmt = "%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z"
    return value.astimezone(zone).strftime(fmt)


def utc(value: datetime | None, *, seconds: bool = False) -> str:
    """``value`` in UTC, e.g. ``2026-07-01 00:30 UTC``; '' for None."""
    if value is None:
        return ""
    fmt = "%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC"
    return value.astimezone(UTC).strftime(fmt)


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC for the JSON API and ``<time datetime=...>``; None stays None."""
    return None if value is None else value.astimezone(UTC).isoformat()


def state_class(state: str | None) -> str:
    """The CSS class for a state: ``state-success``, ``state-up_for_retry``..."""
    return f"state-{state}" if state in KNOWN_STATES else "state-unknown"


def duration(start: datetime | None, end: datetime | None) -> str:
    """``end - start`` as ``1h 02m 03s`` / ``2m 05s`` / ``4s``; '' if either is missing."""
    if start is None or end is None:
        return ""
    total = max(int((end - start).total_seconds()), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
