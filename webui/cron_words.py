"""Schedules in words: ``0 2 * * *`` in Europe/Berlin -> ``At 02:00, Europe/Berlin``.

Pure: no Flask, no database. Anything it does not know how to say well falls back
to the expression itself, so a schedule is never described wrongly.

>>> cron_to_words("0 2 * * *")
'At 02:00'
>>> cron_to_words("*/15 * * * *")
'Every 15 minutes'
>>> cron_to_words("30 6 * * 1-5")
'At 06:30, Monday to Friday'
>>> schedule_in_words("cron", "0 2 * * *", None, "Europe/Berlin")
'At 02:00, Europe/Berlin'
"""

from __future__ import annotations

from datetime import timedelta

DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
_DAY_NAMES = {d[:3].lower(): i for i, d in enumerate(DAYS)}
_MONTH_NAMES = {m[:3].lower(): i + 1 for i, m in enumerate(MONTHS)}


def _num(text: str, names: dict[str, int] | None = None) -> int:
    if names and text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _field(text: str, say, names: dict[str, int] | None = None) -> str:
    """A day-of-week/month/day-of-month field in words: lists and ranges."""
    parts = []
    for part in text.split(","):
        if "/" in part:
            raise ValueError(part)
        if "-" in part:
            lo, hi = part.split("-", 1)
            parts.append(f"{say(_num(lo, names))} to {say(_num(hi, names))}")
        else:
            parts.append(say(_num(part, names)))
    return _list(parts)


def _time_part(minute: str, hour: str, seconds: str | None) -> str:
    sec = "" if seconds in (None, "0") else seconds
    if minute == "*" and hour == "*":
        return "Every minute" if not sec else f"Every minute at second {sec}"
    if minute.startswith("*/") and hour == "*":
        n = _num(minute[2:])
        return "Every minute" if n == 1 else f"Every {n} minutes"
    if minute.isdigit() and hour == "*":
        return f"Every hour at minute {int(minute)}" if int(minute) else "Every hour"
    if minute.isdigit() and hour.startswith("*/"):
        n = _num(hour[2:])
        every = "Every hour" if n == 1 else f"Every {n} hours"
        return every + (f" at minute {int(minute)}" if int(minute) else "")
    if minute.isdigit() and all(h.isdigit() for h in hour.split(",")):
        suffix = f":{int(sec):02d}" if sec and sec.isdigit() else ""
        times = [f"{int(h):02d}:{int(minute):02d}{suffix}" for h in hour.split(",")]
        return "At " + _list(times)
    if minute.isdigit() and "-" in hour and hour.replace("-", "").isdigit():
        lo, hi = hour.split("-")
        return f"At minute {int(minute)} of every hour from {int(lo):02d}:00 to {int(hi):02d}:00"
    raise ValueError(f"{minute} {hour}")


def cron_to_words(expr: str) -> str:
    """A 5-field cron (or 6 fields, seconds last as croniter reads them) in words."""
    fields = expr.split()
    try:
        if len(fields) == 6:  # croniter: the sixth field is seconds
            minute, hour, dom, month, dow, seconds = fields
        elif len(fields) == 5:
            minute, hour, dom, month, dow = fields
            seconds = None
        else:
            return expr
        out = [_time_part(minute, hour, seconds)]
        if dom != "*":
            out.append("on the " + _field(dom, _ordinal) + " of the month")
        if month != "*":
            out.append("in " + _field(month, lambda n: MONTHS[n - 1], _MONTH_NAMES))
        if dow != "*":
            out.append(_field(dow, lambda n: DAYS[n % 7], _DAY_NAMES))
        return ", ".join(out)
    except (ValueError, IndexError):
        return f"cron {expr}"


def interval_in_words(interval: timedelta) -> str:
    total = int(interval.total_seconds())
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if total % size == 0:
            n = total // size
            return f"Every {unit}" if n == 1 else f"Every {n} {unit}s"
    return f"Every {interval}"


def schedule_in_words(
    kind: str, expr: str | None, interval: timedelta | None, timezone: str
) -> str:
    """What a DAG's schedule means, with its time zone when the time of day matters."""
    if kind == "cron" and expr:
        return f"{cron_to_words(expr)}, {timezone}"
    if kind == "interval" and interval is not None:
        return interval_in_words(interval)
    if kind == "once":
        return "Once"
    return "Manual only"
