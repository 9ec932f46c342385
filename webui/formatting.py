"""Pure display helpers used as Jinja filters (no Flask, no database).

>>> from datetime import datetime, UTC
>>> at = datetime(2026, 7, 1, 0, 30, tzinfo=UTC)
>>> in_zone(at, "Europe/Berlin")
'2026-07-01 02:30:00 CEST'
>>> utc(at)
'2026-07-01 00:30:00 UTC'
>>> seconds_text(0.038), seconds_text(1.24), seconds_text(184), seconds_text(7800)
('38 ms', '1.2 s', '3 m 04 s', '2 h 10 m')
>>> ago(at, at + timedelta(minutes=3))
'3 min ago'

One time format everywhere (``YYYY-MM-DD HH:MM:SS ZONE``), one duration format
(:func:`seconds_text`); no page formats either in JavaScript, so these are the only
copies of the rules (docs/webui.md, "Times and durations").
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from markupsafe import Markup, escape

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


def in_zone(value: datetime | None, timezone: str, *, seconds: bool = True) -> str:
    """``value`` as wall time in ``timezone`` with its abbreviation; '' for None."""
    if value is None:
        return ""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    fmt = "%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z"
    return value.astimezone(zone).strftime(fmt)


def utc(value: datetime | None, *, seconds: bool = True) -> str:
    """``value`` in UTC, e.g. ``2026-07-01 00:30:00 UTC``; '' for None."""
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


def time_tag(value: datetime | None, timezone: str = "UTC") -> Markup:
    """``value`` as a ``<time>`` in ``timezone``, with UTC on hover (its title); '' for None.

    >>> time_tag(datetime(2026, 12, 1, 19, 46, 32, tzinfo=UTC), "Europe/Berlin")
    Markup('<time datetime="2026-12-01T19:46:32+00:00" title="2026-12-01 19:46:32 UTC">2026-12-01 20:46:32 CET</time>')
    """
    if value is None:
        return Markup("")
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        iso(value), utc(value), in_zone(value, timezone)
    )


_STAMP = re.compile(r"\b(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\b")


def stamps(text: str, timezone: str = "UTC") -> Markup:
    """``text`` escaped, each ``2026-12-01 19:46:32 UTC`` in it (``clock.stamp``, as the
    explainer writes times) shown as :func:`time_tag` in ``timezone``, UTC on hover."""

    def tag(found: re.Match[str]) -> str:
        at = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        return str(time_tag(at, timezone))

    return Markup(_STAMP.sub(tag, str(escape(text))))


def ago(value: datetime | None, now: datetime) -> str:
    """How long ago ``value`` was, for a list scanned by eye: ``just now``, ``45 s ago``,
    ``3 min ago``, ``2 h ago``, ``5 d ago`` (``in 3 min`` for the future); '' for None."""
    if value is None:
        return ""
    secs = int((now - value).total_seconds())
    future, secs = secs < 0, abs(secs)
    if secs < 10:
        return "just now"
    if secs < 60:
        text = f"{secs} s"
    elif secs < 3600:
        text = f"{secs // 60} min"
    elif secs < 86400:
        text = f"{secs // 3600} h"
    else:
        text = f"{secs // 86400} d"
    return f"in {text}" if future else f"{text} ago"


def ago_tag(value: datetime | None, now: datetime, timezone: str = "UTC") -> Markup:
    """:func:`ago` in a ``<time>`` whose title is the full time in ``timezone`` and UTC."""
    if value is None:
        return Markup("")
    full = in_zone(value, timezone)
    title = full if timezone == "UTC" else f"{full} · {utc(value)}"
    return Markup('<time class="ago" datetime="{}" title="{}">{}</time>').format(
        iso(value), title, ago(value, now)
    )


def seconds_text(seconds: float | timedelta | None) -> str:
    """A duration readable at every scale: ``38 ms``, ``1.2 s``, ``42 s``, ``3 m 04 s``,
    ``2 h 10 m``, ``3 d 04 h``; each rounded to its last unit shown (so 999.7 ms is
    ``1.0 s``, 59.6 s is ``1 m 00 s``); negative is ``0 ms``; '' for None."""
    if seconds is None:
        return ""
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    ms = max(int(seconds * 1000 + 0.5), 0)
    if ms < 1000:
        return f"{ms} ms"
    tenths = (ms + 50) // 100
    if tenths < 100:
        return f"{tenths // 10}.{tenths % 10} s"
    secs = (ms + 500) // 1000
    if secs < 60:
        return f"{secs} s"
    if secs < 3600:
        return f"{secs // 60} m {secs % 60:02d} s"
    mins = (secs + 30) // 60
    if mins < 24 * 60:
        return f"{mins // 60} h {mins % 60:02d} m"
    hours = (mins + 30) // 60
    return f"{hours // 24} d {hours % 24:02d} h"


def duration(start: datetime | None, end: datetime | None) -> str:
    """``end - start`` by :func:`seconds_text`; '' if either is missing."""
    if start is None or end is None:
        return ""
    return seconds_text(end - start)


def bytes_text(size: int | None) -> str:
    """A size readable at every scale: ``512 B``, ``1.5 KiB``, ``12 MiB``, ``3.2 GiB``
    (binary units, one decimal under ten); '' for None."""
    if size is None:
        return ""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{size} B"  # pragma: no cover - the loop returns
