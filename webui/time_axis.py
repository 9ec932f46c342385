"""Round ticks for a time axis: relative (0 s, 5 s, 10 s ...) and wall-clock.

Pure. A step is the smallest "round" duration that keeps the ticks at most
``max_ticks`` + 1: 1-2-5 steps under a minute (0.1 s, 0.2 s, 0.5 s, 1 s, 2 s, 5 s,
10 s, and 15 s, 30 s, which read better than 20 s and 50 s on a clock), then the
same in minutes (1, 2, 5, 10, 15, 30 m), hours (1, 2, 3, 6, 12 h) and days
(1, 2, 5, 10 ... d). Wall-clock ticks fall on the same step counted from midnight in
the DAG's timezone, so they read 10:15, 10:20, 10:25 rather than the run's start
plus five minutes.

>>> [tick_text(s, 5) for s in relative_ticks(18.3)]
['0 s', '5 s', '10 s', '15 s']
>>> step_for(600)
120.0
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

_CLOCK_STEPS = (
    1, 2, 5, 10, 15, 30,  # seconds
    60, 120, 300, 600, 900, 1800,  # minutes
    3600, 7200, 10800, 21600, 43200,  # hours
)  # fmt: skip
DAY = 86400.0


def step_for(total: float, max_ticks: int = 6) -> float:
    """The round step (seconds) that divides ``total`` seconds into at most
    ``max_ticks`` intervals; 1 s for an empty or unreadable span."""
    if not math.isfinite(total) or total <= 0:
        return 1.0
    if total < 1:  # 1-2-5 steps of powers of ten
        base = 10.0 ** math.floor(math.log10(total / max_ticks))
        for m in (1, 2, 5, 10):
            if total / (base * m) <= max_ticks:
                return round(base * m, 12)
    for step in _CLOCK_STEPS:
        if total / step <= max_ticks:
            return float(step)
    days = total / DAY / max_ticks
    base = 10.0 ** math.floor(math.log10(days)) if days >= 1 else 1.0
    for m in (1, 2, 5, 10):
        if days <= base * m:
            return base * m * DAY
    return base * 10 * DAY  # pragma: no cover - the loop's 10 always fits


def relative_ticks(total: float, max_ticks: int = 6) -> list[float]:
    """0, step, 2 step ... up to ``total`` seconds (inclusive), by :func:`step_for`."""
    step = step_for(total, max_ticks)
    n = int(math.floor(max(total, 0) / step + 1e-9))
    return [round(k * step, 9) for k in range(n + 1)]


def tick_text(seconds: float, step: float) -> str:
    """A tick's label, as round as its step: ``0 s``, ``0.5 s``, ``45 s``, ``1 m 30 s``,
    ``2 h``, ``1 d 12 h``."""
    if seconds == 0:
        return "0 s"
    if step < 1:
        digits = max(0, -math.floor(math.log10(step)))
        if seconds < 1:
            return f"{round(seconds * 1000)} ms" if step < 0.1 else f"{seconds:.{digits}f} s"
        return f"{seconds:.{digits}f} s"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, r = divmod(s, 60)
        return f"{m} m {r:02d} s" if r else f"{m} m"
    if s < DAY:
        h, r = divmod(s, 3600)
        return f"{h} h {r // 60:02d} m" if r // 60 else f"{h} h"
    d, r = divmod(s, int(DAY))
    return f"{d} d {r // 3600:02d} h" if r // 3600 else f"{d} d"


def clock_ticks(
    origin: datetime, total: float, timezone: str, max_ticks: int = 6
) -> list[tuple[float, str]]:
    """Wall-clock ticks over [origin, origin + total]: (seconds after ``origin``, the
    time of day in ``timezone``), on round times of day (``10:15``, ``10:20`` ...;
    with seconds when the step is under a minute, with the date when it is a day or
    more)."""
    step = max(step_for(total, max_ticks), 1.0)
    zone = ZoneInfo(timezone)
    local = origin.astimezone(zone)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    since = (local - midnight).total_seconds()
    first = math.ceil(since / step - 1e-9) * step
    fmt = "%H:%M:%S" if step < 60 else ("%Y-%m-%d" if step >= DAY else "%H:%M")
    # the first round time of day, then steps of real time: across a DST change the
    # ticks stay evenly spaced and in order (an hour's ticks read 01:00, 03:00, 04:00)
    at = (midnight + timedelta(seconds=first) - origin).total_seconds()
    out: list[tuple[float, str]] = []
    while at <= total + 1e-9 and len(out) <= 4 * max_ticks:
        when = (origin + timedelta(seconds=at)).astimezone(zone)
        label = when.strftime(fmt)
        if fmt == "%H:%M" and when.hour == 0 and when.minute == 0:
            label = when.strftime("%b %d")  # a new day on an hourly axis
        if at >= -1e-9:
            out.append((at, label))
        at += step
    return out
