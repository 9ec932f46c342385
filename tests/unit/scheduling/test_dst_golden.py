"""Cron fire times across DST, 10 cron expressions x 8 timezones over two years,
checked against an oracle written here from the documented rules with zoneinfo
stepping (no croniter):

* walk UTC in quarter hours (every zone offset and DST shift here is a multiple of
  15 minutes, and every expression fires on a quarter hour);
* an instant fires when its local wall time matches the expression and it is the
  first occurrence of that wall time (fold 0), or the hour field is every hour;
* wall times skipped by a spring-forward gap that match fire once, at the first
  instant after the gap, unless the hour field is every hour: then they do not fire
  (hourly and minutely crons fire at every real hour and minute, no extra one).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

import pytest

from orchestrator.scheduling.schedule import parse_schedule

START = datetime(2026, 1, 1, tzinfo=UTC)
END = datetime(2028, 1, 1, tzinfo=UTC)
STEP = timedelta(minutes=15)
ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # 30-minute DST shift
    "Asia/Kolkata",  # +05:30, no DST
    "America/Santiago",  # shifts at midnight: midnight itself does not exist
    "Pacific/Chatham",  # +12:45 / +13:45
    "Europe/London",
    "Australia/Sydney",
]
# expression -> (minutes, hours, days of month, months, days of week 0=Sunday)
ALL_H, ALL_DOM, ALL_MON, ALL_DOW = (
    set(range(24)),
    set(range(1, 32)),
    set(range(1, 13)),
    set(range(7)),
)
CRONS = {
    "0 2 * * *": ({0}, {2}, ALL_DOM, ALL_MON, ALL_DOW),
    "30 2 * * *": ({30}, {2}, ALL_DOM, ALL_MON, ALL_DOW),
    "0 * * * *": ({0}, ALL_H, ALL_DOM, ALL_MON, ALL_DOW),
    "45 * * * *": ({45}, ALL_H, ALL_DOM, ALL_MON, ALL_DOW),
    "15,45 1-3 * * *": ({15, 45}, {1, 2, 3}, ALL_DOM, ALL_MON, ALL_DOW),
    "0 0 * * *": ({0}, {0}, ALL_DOM, ALL_MON, ALL_DOW),
    "30 1 * * 0": ({30}, {1}, ALL_DOM, ALL_MON, {0}),
    "0 12 1 * *": ({0}, {12}, {1}, ALL_MON, ALL_DOW),
    "45 23 * 3,4,9,10,11 *": ({45}, {23}, ALL_DOM, {3, 4, 9, 10, 11}, ALL_DOW),
    "30 3 * * 1-5": ({30}, {3}, ALL_DOM, ALL_MON, {1, 2, 3, 4, 5}),
}


def _matches(fields, wall: datetime) -> bool:
    minutes, hours, doms, months, dows = fields
    return (
        wall.minute in minutes
        and wall.hour in hours
        and wall.day in doms
        and wall.month in months
        and (wall.isoweekday() % 7) in dows
    )


@lru_cache(maxsize=8)
def _walk(zone: str) -> list[tuple[datetime, datetime, int, list[datetime]]]:
    """(instant, wall time, fold, wall times skipped just before it) per quarter hour."""
    tz = ZoneInfo(zone)
    out = []
    t, prev_wall = START, None
    while t <= END:
        local = t.astimezone(tz)
        wall = local.replace(tzinfo=None)
        gap = []
        if prev_wall is not None and wall - prev_wall > STEP:  # spring forward
            skipped = prev_wall + STEP
            while skipped < wall:
                gap.append(skipped)
                skipped += STEP
        out.append((t, wall, local.fold, gap))
        prev_wall = wall
        t += STEP
    return out


def oracle(fields, zone: str) -> list[datetime]:
    every_hour = fields[1] == ALL_H
    out: set[datetime] = set()
    for t, wall, fold, gap in _walk(zone):
        if not every_hour and any(_matches(fields, w) for w in gap):
            out.add(t)  # a skipped wall time fires at the first instant after the gap
        if _matches(fields, wall) and (fold == 0 or every_hour):
            out.add(t)
    return sorted(out)


@pytest.mark.parametrize("zone", ZONES)
def test_two_years_of_fire_times_match_the_oracle(zone):
    for expr, fields in CRONS.items():
        schedule = parse_schedule(expr, timezone=zone, start=START)
        got = schedule.fire_times(START, END)
        want = oracle(fields, zone)
        assert got == want, (expr, zone, sorted(set(got) ^ set(want))[:5])
        assert len(got) == len(set(got))  # no instant fires twice


def test_the_oracle_sees_the_dst_rules():
    """The oracle is not vacuous: Berlin's spring gap and autumn fold are in it."""
    daily_2 = oracle(CRONS["0 2 * * *"], "Europe/Berlin")
    assert datetime(2026, 3, 29, 1, tzinfo=UTC) in daily_2  # 02:00 missing -> 03:00 CEST
    daily_230 = oracle(CRONS["30 2 * * *"], "Europe/Berlin")
    oct25 = [t for t in daily_230 if t.date() == datetime(2026, 10, 25).date()]
    assert oct25 == [datetime(2026, 10, 25, 0, 30, tzinfo=UTC)]  # first occurrence only
    hourly = oracle(CRONS["0 * * * *"], "Europe/Berlin")
    assert datetime(2026, 10, 25, 0, tzinfo=UTC) in hourly  # 02:00 CEST
    assert datetime(2026, 10, 25, 1, tzinfo=UTC) in hourly  # 02:00 CET, again
    santiago = oracle(CRONS["0 0 * * *"], "America/Santiago")
    assert len(santiago) == 730  # one a day, including the days midnight is skipped
    # every-hour crons skip the gap: no 03:00 CEST for 02:45, just 03:45 CEST
    quarter_to = oracle(CRONS["45 * * * *"], "Europe/Berlin")
    spring = [t for t in quarter_to if t.date() == datetime(2026, 3, 29).date()]
    assert datetime(2026, 3, 29, 1, 0, tzinfo=UTC) not in spring
    assert spring[:3] == [datetime(2026, 3, 29, h, 45, tzinfo=UTC) for h in (0, 1, 2)]
