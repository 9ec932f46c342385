"""The calendar of a DAG's daily run outcomes over a year (issue 27 item 8). Pure.

The store counts runs per UTC hour and state (``store.run_calendar``); here the hours
fall into days of the DAG's timezone (so a run at 23:30 UTC of a Berlin DAG counts on
the next day), and the year becomes a grid: a column per week (Monday first), a row per
weekday, each day coloured by the outcome that matters most (failed, then running...,
then success).

>>> from datetime import UTC, datetime
>>> days = days_of([(datetime(2026, 3, 2, 23, tzinfo=UTC), "failed", 1)], "Europe/Berlin")
>>> days
{datetime.date(2026, 3, 3): {'failed': 1}}
>>> weeks = year_weeks(2026, days)
>>> len(weeks), [d.state for w in weeks for d in w if d and d.counts]
(53, ['failed'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

# the first of these a day's runs are in is the day's colour
PRECEDENCE = ("failed", "running", "queued", "cancelled", "skipped", "success")


@dataclass(frozen=True)
class Day:
    day: date
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return next((s for s in PRECEDENCE if self.counts.get(s)), next(iter(self.counts), "none"))

    @property
    def text(self) -> str:
        """``2026-03-03: 1 failed, 23 success`` (or ``no run``)."""
        order = [s for s in PRECEDENCE if s in self.counts] + sorted(
            set(self.counts) - set(PRECEDENCE)
        )
        runs = ", ".join(f"{self.counts[s]} {s}" for s in order) or "no run"
        return f"{self.day.isoformat()}: {runs}"


def year_bounds(year: int, timezone: str) -> tuple[datetime, datetime]:
    """The UTC instants the ``year`` of ``timezone`` starts and ends at."""
    tz = ZoneInfo(timezone)
    start = datetime(year, 1, 1, tzinfo=tz).astimezone(UTC)
    end = datetime(year + 1, 1, 1, tzinfo=tz).astimezone(UTC)
    return start, end


def days_of(hours: Iterable[tuple[datetime, str, int]], timezone: str) -> dict[date, dict]:
    """Runs by state per day of ``timezone``, from (UTC hour, state, runs) counts."""
    tz = ZoneInfo(timezone)
    out: dict[date, dict[str, int]] = {}
    for hour, state, n in hours:
        day = hour.astimezone(tz).date()
        counts = out.setdefault(day, {})
        counts[state] = counts.get(state, 0) + n
    return out


def year_weeks(year: int, days: Mapping[date, dict[str, int]]) -> list[list[Day | None]]:
    """The year as weeks (Monday first) of 7 days; None pads the first and last week."""
    first = date(year, 1, 1)
    day = first - timedelta(days=first.weekday())
    weeks: list[list[Day | None]] = []
    while day.year <= year or (day.year == year + 1 and day.weekday() != 0 and weeks):
        week: list[Day | None] = []
        for _ in range(7):
            week.append(Day(day, dict(days.get(day, {}))) if day.year == year else None)
            day += timedelta(days=1)
        weeks.append(week)
        if day.year > year:
            break
    return weeks
