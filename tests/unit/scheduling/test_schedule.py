"""Tests for orchestrator.scheduling.schedule.

Every expected fire time below was worked out by hand from the tz rules, not by
running the code.  Offsets used (2026):

* Europe/Berlin: CET +1 / CEST +2; spring forward 2026-03-29 01:00Z (02:00 -> 03:00),
  fall back 2026-10-25 01:00Z (03:00 -> 02:00, 02:00..02:59 occurs twice).
* America/New_York: EST -5 / EDT -4; spring forward 2026-03-08 07:00Z (02:00 -> 03:00),
  fall back 2026-11-01 06:00Z (02:00 -> 01:00, 01:00..01:59 occurs twice).
* Australia/Sydney: AEST +10 / AEDT +11; fall back 2026-04-05 (04-04 16:00Z, 03:00 -> 02:00),
  spring forward 2026-10-04 (10-03 16:00Z, 02:00 -> 03:00).
* Australia/Lord_Howe: +10:30 / +11; fall back 2026-04-05 (04-04 15:00Z, 02:00 -> 01:30).
* Asia/Kolkata: +5:30, no DST.
"""

from __future__ import annotations

import doctest
import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from orchestrator.scheduling import schedule as schedule_module
from orchestrator.scheduling.schedule import Schedule, ScheduleError, parse_schedule

BERLIN = "Europe/Berlin"
NY = "America/New_York"
SYDNEY = "Australia/Sydney"
LORD_HOWE = "Australia/Lord_Howe"
KOLKATA = "Asia/Kolkata"
LONDON = "Europe/London"
EARLY = datetime(2020, 1, 1, tzinfo=UTC)


def u(text: str) -> datetime:
    """'2026-03-29 01:00[:30]' read as UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def cron(expr: str, tz: str = "UTC", start: datetime = EARLY, end: datetime | None = None):
    return parse_schedule(expr, timezone=tz, start=start, end=end)


# --------------------------------------------------------------------------- golden lists

GOLDEN = [
    # Europe/Berlin, spring forward: 02:xx does not exist -> 03:00 CEST = 01:00Z, once a day
    ("0 2 * * *", BERLIN, "2026-03-27 00:00", "2026-03-30 12:00",
     ["2026-03-27 01:00", "2026-03-28 01:00", "2026-03-29 01:00", "2026-03-30 00:00"]),
    ("30 2 * * *", BERLIN, "2026-03-28 00:00", "2026-03-30 12:00",
     ["2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"]),
    ("0 * * * *", BERLIN, "2026-03-28 23:00", "2026-03-29 03:00",
     ["2026-03-28 23:00", "2026-03-29 00:00", "2026-03-29 01:00", "2026-03-29 02:00",
      "2026-03-29 03:00"]),
    ("*/30 * * * *", BERLIN, "2026-03-29 00:00", "2026-03-29 02:00",
     ["2026-03-29 00:00", "2026-03-29 00:30", "2026-03-29 01:00", "2026-03-29 01:30",
      "2026-03-29 02:00"]),
    # Europe/Berlin, fall back: fixed-hour crons fire at the first (CEST) occurrence only
    ("0 2 * * *", BERLIN, "2026-10-24 00:00", "2026-10-26 12:00",
     ["2026-10-24 00:00", "2026-10-25 00:00", "2026-10-26 01:00"]),
    ("30 2 * * *", BERLIN, "2026-10-24 00:00", "2026-10-26 12:00",
     ["2026-10-24 00:30", "2026-10-25 00:30", "2026-10-26 01:30"]),
    ("0 */2 * * *", BERLIN, "2026-10-24 21:00", "2026-10-25 03:00",
     ["2026-10-24 22:00", "2026-10-25 00:00", "2026-10-25 03:00"]),
    # ... every-hour crons fire both 02:00 CEST (00:00Z) and 02:00 CET (01:00Z)
    ("0 * * * *", BERLIN, "2026-10-24 22:00", "2026-10-25 03:00",
     ["2026-10-24 22:00", "2026-10-24 23:00", "2026-10-25 00:00", "2026-10-25 01:00",
      "2026-10-25 02:00", "2026-10-25 03:00"]),
    ("*/30 * * * *", BERLIN, "2026-10-24 23:30", "2026-10-25 02:00",
     ["2026-10-24 23:30", "2026-10-25 00:00", "2026-10-25 00:30", "2026-10-25 01:00",
      "2026-10-25 01:30", "2026-10-25 02:00"]),
    # America/New_York
    ("0 2 * * *", NY, "2026-03-07 00:00", "2026-03-09 12:00",
     ["2026-03-07 07:00", "2026-03-08 07:00", "2026-03-09 06:00"]),
    ("30 2 * * *", NY, "2026-03-07 00:00", "2026-03-09 12:00",
     ["2026-03-07 07:30", "2026-03-08 07:00", "2026-03-09 06:30"]),
    ("0 * * * *", NY, "2026-03-08 05:00", "2026-03-08 09:00",
     ["2026-03-08 05:00", "2026-03-08 06:00", "2026-03-08 07:00", "2026-03-08 08:00",
      "2026-03-08 09:00"]),
    ("30 1 * * *", NY, "2026-10-31 00:00", "2026-11-02 12:00",
     ["2026-10-31 05:30", "2026-11-01 05:30", "2026-11-02 06:30"]),
    ("0 2 * * *", NY, "2026-10-31 00:00", "2026-11-02 12:00",
     ["2026-10-31 06:00", "2026-11-01 07:00", "2026-11-02 07:00"]),
    ("30 2 * * *", NY, "2026-10-31 00:00", "2026-11-02 12:00",
     ["2026-10-31 06:30", "2026-11-01 07:30", "2026-11-02 07:30"]),
    ("0 * * * *", NY, "2026-11-01 03:00", "2026-11-01 09:00",
     ["2026-11-01 03:00", "2026-11-01 04:00", "2026-11-01 05:00", "2026-11-01 06:00",
      "2026-11-01 07:00", "2026-11-01 08:00", "2026-11-01 09:00"]),
    # Australia/Sydney: April = fall back, October = spring forward
    ("0 2 * * *", SYDNEY, "2026-04-03 00:00", "2026-04-06 00:00",
     ["2026-04-03 15:00", "2026-04-04 15:00", "2026-04-05 16:00"]),
    ("30 2 * * *", SYDNEY, "2026-04-03 00:00", "2026-04-06 00:00",
     ["2026-04-03 15:30", "2026-04-04 15:30", "2026-04-05 16:30"]),
    ("0 * * * *", SYDNEY, "2026-04-04 14:00", "2026-04-04 18:00",
     ["2026-04-04 14:00", "2026-04-04 15:00", "2026-04-04 16:00", "2026-04-04 17:00",
      "2026-04-04 18:00"]),
    ("0 2 * * *", SYDNEY, "2026-10-02 00:00", "2026-10-05 00:00",
     ["2026-10-02 16:00", "2026-10-03 16:00", "2026-10-04 15:00"]),
    ("30 2 * * *", SYDNEY, "2026-10-02 00:00", "2026-10-05 00:00",
     ["2026-10-02 16:30", "2026-10-03 16:00", "2026-10-04 15:30"]),
    ("0 * * * *", SYDNEY, "2026-10-03 14:00", "2026-10-03 18:00",
     ["2026-10-03 14:00", "2026-10-03 15:00", "2026-10-03 16:00", "2026-10-03 17:00",
      "2026-10-03 18:00"]),
    # Australia/Lord_Howe: half-hour DST shift; 01:30..01:59 occurs twice
    ("*/30 * * * *", LORD_HOWE, "2026-04-04 14:00", "2026-04-04 16:00",
     ["2026-04-04 14:00", "2026-04-04 14:30", "2026-04-04 15:00", "2026-04-04 15:30",
      "2026-04-04 16:00"]),
    # hourly on the wall clock: 01:00 (+11) then 02:00 (+10:30) is 90 real minutes later
    ("0 * * * *", LORD_HOWE, "2026-04-04 13:00", "2026-04-04 17:00",
     ["2026-04-04 13:00", "2026-04-04 14:00", "2026-04-04 15:30", "2026-04-04 16:30"]),
    # Asia/Kolkata: +05:30
    ("0 2 * * *", KOLKATA, "2026-03-27 00:00", "2026-03-30 00:00",
     ["2026-03-27 20:30", "2026-03-28 20:30", "2026-03-29 20:30"]),
    ("30 * * * *", KOLKATA, "2026-01-01 00:00", "2026-01-01 03:00",
     ["2026-01-01 00:00", "2026-01-01 01:00", "2026-01-01 02:00", "2026-01-01 03:00"]),
    ("0 9 * * mon-fri", KOLKATA, "2026-01-01 00:00", "2026-01-06 12:00",
     ["2026-01-01 03:30", "2026-01-02 03:30", "2026-01-05 03:30", "2026-01-06 03:30"]),
    # spring forward, every-hour crons: a nonexistent wall time is skipped, so nothing
    # fires at the end of the gap (croniter's and dagster's answers); it used to fire there
    # too (02:00 BST before 02:07 BST, 03:00 CEST before 03:45 CEST...)
    ("7 * * * *", LONDON, "2025-03-30 00:00", "2025-03-30 02:30",  # gap 01:00Z: GMT -> BST
     ["2025-03-30 00:07", "2025-03-30 01:07", "2025-03-30 02:07"]),
    ("45 * * * *", BERLIN, "2023-03-25 23:00", "2023-03-26 02:00",  # gap 01:00Z (dagster's)
     ["2023-03-25 23:45", "2023-03-26 00:45", "2023-03-26 01:45"]),
    ("30 * * * *", NY, "2026-03-08 05:00", "2026-03-08 09:00",  # 00:30, 01:30 EST, 03:30 EDT
     ["2026-03-08 05:30", "2026-03-08 06:30", "2026-03-08 07:30", "2026-03-08 08:30"]),
    ("* * * * * 30", NY, "2026-03-08 06:58", "2026-03-08 07:02",  # no 03:00:00 EDT
     ["2026-03-08 06:58:30", "2026-03-08 06:59:30", "2026-03-08 07:00:30",
      "2026-03-08 07:01:30"]),
    ("*/15 * * * *", BERLIN, "2026-03-29 00:30", "2026-03-29 01:30",  # 01:45 CET, 03:00 CEST
     ["2026-03-29 00:30", "2026-03-29 00:45", "2026-03-29 01:00", "2026-03-29 01:15",
      "2026-03-29 01:30"]),
    # Lord Howe springs forward half an hour (02:00 +10:30 -> 02:30 +11 at 15:30Z)
    ("0 * * * *", LORD_HOWE, "2026-10-03 14:00", "2026-10-03 16:30",
     ["2026-10-03 14:30", "2026-10-03 16:00"]),
    # ... while crons that name an hour keep firing once at the end of the gap
    ("*/20 1-3 * * *", BERLIN, "2026-03-29 00:00", "2026-03-29 02:00",
     ["2026-03-29 00:00", "2026-03-29 00:20", "2026-03-29 00:40", "2026-03-29 01:00",
      "2026-03-29 01:20", "2026-03-29 01:40"]),
    ("7,37 1 * * *", LONDON, "2025-03-29 00:00", "2025-03-31 00:00",  # 01:xx GMT is the gap
     ["2025-03-29 01:07", "2025-03-29 01:37", "2025-03-30 01:00"]),
    ("0 2 * * *", LORD_HOWE, "2026-10-02 00:00", "2026-10-04 16:00",  # 02:30 +11 = 15:30Z
     ["2026-10-02 15:30", "2026-10-03 15:30", "2026-10-04 15:00"]),
    ("15 2 * * * 30", NY, "2026-03-07 00:00", "2026-03-09 12:00",  # 02:15:30 -> 03:00 EDT
     ["2026-03-07 07:15:30", "2026-03-08 07:00", "2026-03-09 06:15:30"]),
    # UTC, and the seconds field (6th field, last)
    ("0 2 * * *", "UTC", "2026-03-28 00:00", "2026-03-29 12:00",
     ["2026-03-28 02:00", "2026-03-29 02:00"]),
    ("*/10 * * * * 30", "UTC", "2026-01-01 00:00", "2026-01-01 00:25",
     ["2026-01-01 00:00:30", "2026-01-01 00:10:30", "2026-01-01 00:20:30"]),
    ("* * * * * */20", BERLIN, "2026-10-25 00:59", "2026-10-25 01:00:40",
     ["2026-10-25 00:59:00", "2026-10-25 00:59:20", "2026-10-25 00:59:40",
      "2026-10-25 01:00:00", "2026-10-25 01:00:20", "2026-10-25 01:00:40"]),
]  # fmt: skip


@pytest.mark.parametrize(("expr", "tz", "lo", "hi", "expected"), GOLDEN)
def test_golden_fire_times(expr, tz, lo, hi, expected):
    s = cron(expr, tz)
    want = [u(x) for x in expected]
    got = s.fire_times(u(lo), u(hi))
    assert got == want
    assert all(t.tzinfo is UTC for t in got)
    # chaining next_after gives the same list
    chained, t = [], s.next_after(u(lo) - timedelta(microseconds=1))
    while t is not None and t <= u(hi):
        chained.append(t)
        t = s.next_after(t)
    assert chained == want
    # and walking backwards with previous_before too
    backwards, t = [], s.previous_before(u(hi) + timedelta(microseconds=1))
    while t is not None and t >= u(lo):
        backwards.append(t)
        t = s.previous_before(t)
    assert backwards[::-1] == want


def test_next_after_inside_repeated_hour_berlin():
    hourly = cron("0 * * * *", BERLIN)
    # 00:30Z = 02:30 CEST: next is 02:00 CET = 01:00Z, not 03:00 CET
    assert hourly.next_after(u("2026-10-25 00:30")) == u("2026-10-25 01:00")
    assert hourly.next_after(u("2026-10-25 01:30")) == u("2026-10-25 02:00")
    assert hourly.previous_before(u("2026-10-25 01:30")) == u("2026-10-25 01:00")
    assert hourly.previous_before(u("2026-10-25 01:00")) == u("2026-10-25 00:00")
    daily = cron("30 2 * * *", BERLIN)
    # 02:30 CET (01:30Z) is the second occurrence: skipped for a fixed-hour cron
    assert daily.next_after(u("2026-10-25 00:30")) == u("2026-10-26 01:30")
    assert daily.previous_before(u("2026-10-26 01:30")) == u("2026-10-25 00:30")


def test_next_after_inside_repeated_hour_new_york():
    s = cron("*/15 * * * *", NY)
    # 06:40Z = 01:40 EST (second 01:xx); 01:45 EST = 06:45Z
    assert s.next_after(u("2026-11-01 06:40")) == u("2026-11-01 06:45")
    # 05:50Z = 01:50 EDT; next is 01:00 EST = 06:00Z
    assert s.next_after(u("2026-11-01 05:50")) == u("2026-11-01 06:00")


@pytest.mark.parametrize(
    ("tz", "day"),
    [(BERLIN, "2026-03-29"), (BERLIN, "2026-10-25"), (NY, "2026-03-08"), (NY, "2026-11-01"),
     (SYDNEY, "2026-04-04"), (SYDNEY, "2026-10-03"), (KOLKATA, "2026-03-29"), ("UTC", "2026-03-29")],
)  # fmt: skip
def test_every_30_minutes_is_gapless_in_utc_around_dst_changes(tz, day):
    s = cron("*/30 * * * *", tz)
    lo = u(f"{day} 00:00") - timedelta(days=2)
    times = s.fire_times(lo, lo + timedelta(days=4, minutes=-30))
    assert len(times) == 4 * 48 and times[0] == lo
    assert all(b - a == timedelta(minutes=30) for a, b in zip(times, times[1:], strict=False))


@pytest.mark.parametrize("tz", [BERLIN, NY, SYDNEY, LORD_HOWE, KOLKATA])
def test_daily_at_0230_fires_exactly_once_per_local_day(tz):
    s = cron("30 2 * * *", tz)
    times = s.fire_times(u("2026-01-01 00:00"), u("2027-01-01 00:00"))
    local_days = [t.astimezone(ZoneInfo(tz)).date() for t in times]
    assert len(set(local_days)) == len(times)
    assert all(a < b for a, b in zip(times, times[1:], strict=False))
    assert len(times) in (365, 366)


# --------------------------------------------------------------------------- presets


@pytest.mark.parametrize(
    ("preset", "expr", "first"),
    [
        ("@yearly", "0 0 1 1 *", "2027-01-01 00:00"),
        ("@annually", "0 0 1 1 *", "2027-01-01 00:00"),
        ("@monthly", "0 0 1 * *", "2026-02-01 00:00"),
        ("@weekly", "0 0 * * 0", "2026-01-04 00:00"),
        ("@daily", "0 0 * * *", "2026-01-02 00:00"),
        ("@midnight", "0 0 * * *", "2026-01-02 00:00"),
        ("@hourly", "0 * * * *", "2026-01-01 13:00"),
        ("@DAILY", "0 0 * * *", "2026-01-02 00:00"),
    ],
)
def test_presets(preset, expr, first):
    s = parse_schedule(preset, start=u("2026-01-01 12:30"))
    assert (s.kind, s.expr, s.interval) == ("cron", expr, None)
    assert s.first() == u(first)


def test_cron_whitespace_is_normalised_and_described():
    s = parse_schedule("  0   2 * * * ", timezone=BERLIN, start=EARLY)
    assert s.expr == "0 2 * * *"
    assert s.describe() == "cron 0 2 * * * (Europe/Berlin)"


def test_first_is_inclusive_and_start_is_converted_to_utc():
    s = parse_schedule("0 0 * * *", start=u("2026-01-01 00:00"))
    assert s.first() == u("2026-01-01 00:00")
    berlin_start = datetime(2026, 1, 1, tzinfo=ZoneInfo(BERLIN))
    s = parse_schedule("0 2 * * *", timezone=BERLIN, start=berlin_start,
                       end=datetime(2026, 1, 3, 3, tzinfo=ZoneInfo(BERLIN)))  # fmt: skip
    assert s.start == u("2025-12-31 23:00") and s.start.tzinfo is UTC
    assert s.end == u("2026-01-03 02:00") and s.end.tzinfo is UTC
    assert s.first() == u("2026-01-01 01:00")
    assert s.next_after(u("2020-01-01 00:00")) == u("2026-01-01 01:00")  # never before start


# --------------------------------------------------------------------------- end, limit


def test_end_is_inclusive_for_cron():
    s = cron("0 0 * * *", start=u("2026-01-01 00:00"), end=u("2026-01-03 00:00"))
    assert s.fire_times(EARLY, u("2030-01-01 00:00")) == [
        u("2026-01-01 00:00"), u("2026-01-02 00:00"), u("2026-01-03 00:00"),
    ]  # fmt: skip
    assert s.next_after(u("2026-01-02 00:00")) == u("2026-01-03 00:00")
    assert s.next_after(u("2026-01-03 00:00")) is None
    assert s.previous_before(u("2030-01-01 00:00")) == u("2026-01-03 00:00")
    assert s.previous_before(u("2026-01-01 00:00")) is None


def test_fire_times_limit_and_clamping():
    s = cron("0 * * * *", start=u("2026-01-01 05:00"), end=u("2026-01-01 09:00"))
    assert s.fire_times(u("2026-01-01 00:00"), u("2026-01-02 00:00"), limit=3) == [
        u("2026-01-01 05:00"), u("2026-01-01 06:00"), u("2026-01-01 07:00"),
    ]  # fmt: skip
    assert s.fire_times(u("2026-01-01 06:30"), u("2026-01-02 00:00")) == [
        u("2026-01-01 07:00"), u("2026-01-01 08:00"), u("2026-01-01 09:00"),
    ]  # fmt: skip
    assert s.fire_times(u("2026-01-01 06:00"), u("2026-01-01 06:00")) == [u("2026-01-01 06:00")]
    assert s.fire_times(u("2026-01-01 07:00"), u("2026-01-01 06:00")) == []
    assert s.fire_times(u("2026-01-01 00:00"), u("2026-01-02 00:00"), limit=0) == []
    with pytest.raises(ScheduleError, match="limit must be >= 0"):
        s.fire_times(u("2026-01-01 00:00"), u("2026-01-02 00:00"), limit=-1)


# --------------------------------------------------------------------------- previous, data interval


def test_previous_before_cron():
    s = cron("0 2 * * *", BERLIN, start=u("2026-03-27 00:00"))
    assert s.previous_before(u("2026-03-30 00:00")) == u("2026-03-29 01:00")
    assert s.previous_before(u("2026-03-30 00:00:01")) == u("2026-03-30 00:00")
    assert s.previous_before(u("2026-03-27 01:00")) is None  # the earlier one is before start
    assert s.previous_before(u("2020-01-01 00:00")) is None


def test_data_interval_cron_first_and_later():
    s = cron("0 2 * * *", BERLIN, start=u("2026-03-27 00:00"))
    assert s.first() == u("2026-03-27 01:00")
    # the first run's interval starts at the previous cron match, before start
    assert s.data_interval(u("2026-03-27 01:00")) == (u("2026-03-26 01:00"), u("2026-03-27 01:00"))
    # 23-hour day
    assert s.data_interval(u("2026-03-29 01:00")) == (u("2026-03-28 01:00"), u("2026-03-29 01:00"))
    assert s.data_interval(u("2026-03-30 00:00")) == (u("2026-03-29 01:00"), u("2026-03-30 00:00"))
    hourly = cron("0 * * * *", BERLIN)
    assert hourly.data_interval(u("2026-10-25 01:00")) == (
        u("2026-10-25 00:00"), u("2026-10-25 01:00"),
    )  # fmt: skip


def test_data_interval_accepts_any_aware_zone():
    s = cron("0 2 * * *", BERLIN, start=u("2026-03-27 00:00"))
    ld = datetime(2026, 3, 30, 2, tzinfo=ZoneInfo(BERLIN))
    assert s.data_interval(ld) == (u("2026-03-29 01:00"), u("2026-03-30 00:00"))


# --------------------------------------------------------------------------- interval


def test_interval_schedule():
    s = parse_schedule(timedelta(minutes=30), timezone=BERLIN, start=u("2026-03-29 00:00"),
                       end=u("2026-03-29 02:00"))  # fmt: skip
    assert (s.kind, s.expr, s.interval) == ("interval", None, timedelta(minutes=30))
    assert s.describe() == "every 0:30:00"
    assert s.first() == u("2026-03-29 00:00")
    assert s.next_after(u("2026-01-01 00:00")) == u("2026-03-29 00:00")
    assert s.next_after(u("2026-03-29 00:00")) == u("2026-03-29 00:30")
    assert s.next_after(u("2026-03-29 00:29:59")) == u("2026-03-29 00:30")
    assert s.next_after(u("2026-03-29 01:30")) == u("2026-03-29 02:00")  # DST irrelevant
    assert s.next_after(u("2026-03-29 02:00")) is None  # end inclusive, then over
    assert s.previous_before(u("2026-03-29 00:00")) is None
    assert s.previous_before(u("2026-03-29 00:45")) == u("2026-03-29 00:30")
    assert s.previous_before(u("2026-03-29 01:00")) == u("2026-03-29 00:30")
    assert s.previous_before(u("2030-01-01 00:00")) == u("2026-03-29 02:00")
    assert s.fire_times(EARLY, u("2030-01-01 00:00"), limit=4) == [
        u("2026-03-29 00:00"), u("2026-03-29 00:30"), u("2026-03-29 01:00"), u("2026-03-29 01:30"),
    ]  # fmt: skip
    assert s.data_interval(u("2026-03-29 00:00")) == (u("2026-03-28 23:30"), u("2026-03-29 00:00"))
    assert s.data_interval(u("2026-03-29 01:00")) == (u("2026-03-29 00:30"), u("2026-03-29 01:00"))


def test_interval_next_after_is_arithmetic_far_from_start():
    s = parse_schedule(timedelta(seconds=7), start=u("2000-01-01 00:00"))
    t = s.next_after(u("2026-06-01 12:00"))
    # 2000-01-01 .. 2026-06-01 12:00 is 9648.5 days = 833630400 s = 7 * 119090057 + 1
    assert t == u("2026-06-01 12:00:06")


# --------------------------------------------------------------------------- once, none


def test_once():
    s = parse_schedule("@once", timezone=NY, start=u("2026-01-01 00:00"))
    assert (s.kind, s.expr, s.interval) == ("once", None, None)
    assert s.describe() == "once at 2026-01-01T00:00:00+00:00"
    assert s.first() == u("2026-01-01 00:00")
    assert s.next_after(u("2025-12-31 23:59")) == u("2026-01-01 00:00")
    assert s.next_after(u("2026-01-01 00:00")) is None
    assert s.previous_before(u("2026-01-01 00:00")) is None
    assert s.previous_before(u("2026-01-01 00:00:01")) == u("2026-01-01 00:00")
    assert s.fire_times(EARLY, u("2030-01-01 00:00")) == [u("2026-01-01 00:00")]
    assert s.fire_times(u("2026-01-02 00:00"), u("2030-01-01 00:00")) == []
    ld = u("2026-01-01 00:00")
    assert s.data_interval(ld) == (ld, ld)


@pytest.mark.parametrize("start", [None, u("2026-01-01 00:00")])
def test_none_is_manual_only(start):
    s = parse_schedule(None, start=start)
    assert (s.kind, s.expr, s.interval, s.timezone, s.start) == ("none", None, None, "UTC", start)
    assert s.describe() == "manual only"
    assert s.first() is None
    assert s.next_after(u("2026-01-01 00:00")) is None
    assert s.previous_before(u("2027-01-01 00:00")) is None
    assert s.fire_times(EARLY, u("2030-01-01 00:00")) == []
    ld = u("2026-05-05 05:05")
    assert s.data_interval(ld) == (ld, ld)


def test_schedule_is_frozen_and_comparable():
    a = parse_schedule("@daily", start=EARLY)
    assert a == Schedule("cron", "0 0 * * *", None, "UTC", EARLY, None)
    assert hash(a) == hash(parse_schedule("0 0 * * *", start=EARLY))
    with pytest.raises(AttributeError):
        a.kind = "none"  # type: ignore[misc]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("expr", "match"),
    [
        ("61 * * * *", r"bad cron expression '61 \* \* \* \*': .*minute must be in 0\.\.59"),
        ("* 24 * * *", r"bad cron expression '\* 24 \* \* \*': .*hour must be in 0\.\.23"),
        ("* * 0 * *", r"day-of-month must be in 1\.\.31"),
        ("* * * 13 *", r"month must be in 1\.\.12"),
        ("* * * * 8", r"day-of-week must be in 0\.\.7"),
        ("* * * * * 61", r"second must be in 0\.\.59"),
        ("* * *", r"bad cron expression '\* \* \*': expected 5 fields .* got 3"),
        ("0 0 1 1 * 0 2030", r"expected 5 fields .* got 7"),
        ("every day", r"bad cron expression 'every day': expected 5 fields"),
        ("0 0 31 2 *", r"bad cron expression '0 0 31 2 \*': it never matches"),
        ("H * * * *", r"hashed \(H\) and random \(R\) minute fields are not supported"),
        ("R * * * *", r"random \(R\)"),
        ("0 0 * * fri,R", r"random \(R\) day-of-week"),
        ("@reboot", r"unknown schedule preset '@reboot'"),
        ("", r"schedule is an empty string"),
        ("   ", r"schedule is an empty string"),
    ],
)
def test_bad_cron_strings(expr, match):
    with pytest.raises(ScheduleError, match=match):
        parse_schedule(expr, start=EARLY)


def test_schedule_error_is_a_value_error():
    assert issubclass(ScheduleError, ValueError)


@pytest.mark.parametrize("bad", [42, 1.5, b"@daily", ["@daily"], True])
def test_bad_schedule_type(bad):
    with pytest.raises(ScheduleError, match="schedule must be a cron string"):
        parse_schedule(bad, start=EARLY)  # type: ignore[arg-type]


@pytest.mark.parametrize("td", [timedelta(0), timedelta(seconds=-1)])
def test_non_positive_interval(td):
    with pytest.raises(ScheduleError, match="interval schedule must be positive"):
        parse_schedule(td, start=EARLY)


@pytest.mark.parametrize("tz", ["Mars/Base", "", "../etc/passwd", "Europe"])
def test_unknown_timezone(tz):
    with pytest.raises(ScheduleError, match=f"^unknown timezone '{tz}'$".replace(".", r"\.")):
        parse_schedule("@daily", timezone=tz, start=EARLY)


def test_unknown_timezone_exact_message():
    with pytest.raises(ScheduleError) as info:
        parse_schedule("@daily", timezone="Mars/Base", start=EARLY)
    assert str(info.value) == "unknown timezone 'Mars/Base'"


def test_naive_start_and_end():
    with pytest.raises(ScheduleError, match="start_date must be timezone-aware, got naive"):
        parse_schedule("@daily", start=datetime(2026, 1, 1))
    with pytest.raises(ScheduleError, match="end_date must be timezone-aware, got naive"):
        parse_schedule("@daily", start=EARLY, end=datetime(2026, 1, 1))
    with pytest.raises(ScheduleError, match="end_date .*naive"):
        parse_schedule(None, start=None, end=datetime(2026, 1, 1))


def test_end_before_start():
    with pytest.raises(ScheduleError, match="end_date 2025-12-31T23:00:00\\+00:00 is before start"):
        parse_schedule("@daily", start=u("2026-01-01 00:00"), end=u("2025-12-31 23:00"))
    # equal is fine (end is inclusive)
    s = parse_schedule("@daily", start=u("2026-01-01 00:00"), end=u("2026-01-01 00:00"))
    assert s.fire_times(EARLY, u("2030-01-01 00:00")) == [u("2026-01-01 00:00")]


@pytest.mark.parametrize(
    ("sched", "shown"),
    [("0 2 * * *", "'0 2 \\* \\* \\*'"), ("@once", "'@once'"), (timedelta(hours=1), "1:00:00")],
)
def test_start_required(sched, shown):
    with pytest.raises(ScheduleError, match=f"start_date is required for schedule {shown}"):
        parse_schedule(sched, start=None)


def test_naive_arguments_to_methods():
    s = cron("0 * * * *")
    naive = datetime(2026, 1, 1)
    with pytest.raises(ScheduleError, match="after must be timezone-aware"):
        s.next_after(naive)
    with pytest.raises(ScheduleError, match="at must be timezone-aware"):
        s.previous_before(naive)
    with pytest.raises(ScheduleError, match="logical_date must be timezone-aware"):
        s.data_interval(naive)
    with pytest.raises(ScheduleError, match="start must be timezone-aware"):
        s.fire_times(naive, u("2026-01-01 00:00"))


# --------------------------------------------------------------------------- properties


def _property_schedules() -> list[Schedule]:
    return [
        cron("0 * * * *", BERLIN),
        cron("30 2 * * *", BERLIN),
        cron("*/20 * * * *", NY),
        cron("30 1 * * *", NY),
        cron("0 2 * * *", SYDNEY),
        cron("*/30 * * * *", LORD_HOWE),
        cron("15 */3 * * *", KOLKATA),
        cron("* * * * * */30", BERLIN),
        cron("0 0 L * *", SYDNEY),
        parse_schedule(timedelta(minutes=47), timezone=BERLIN, start=u("2025-12-01 00:00:13")),
    ]


@pytest.mark.parametrize("schedule", _property_schedules(), ids=lambda s: s.describe())
def test_random_after_properties(schedule):
    rng = random.Random(20260329)
    # random instants in 2026, biased towards the DST days of the zones above
    hot = [u(d) for d in ("2026-03-08 00:00", "2026-03-29 00:00", "2026-04-04 12:00",
                          "2026-10-03 12:00", "2026-10-25 00:00", "2026-11-01 00:00")]  # fmt: skip
    xs = []
    for _ in range(200):
        base = rng.choice(hot) if rng.random() < 0.7 else u("2026-01-01 00:00")
        span = 86_400 if base != u("2026-01-01 00:00") else 365 * 86_400
        xs.append(base + timedelta(seconds=rng.uniform(0, span)))
    xs.sort()
    previous_t = None
    for x in xs:
        t = schedule.next_after(x)
        assert t is not None and t > x and t.tzinfo is UTC
        assert previous_t is None or t >= previous_t  # monotone in x
        previous_t = t
        p = schedule.previous_before(t)
        assert p is None or p <= x  # nothing fires in (x, t)
        if p is not None:
            assert p.tzinfo is UTC
            assert schedule.next_after(p) == t
        q = schedule.previous_before(x)
        assert q is not None and q < x
        assert schedule.next_after(q) >= x
        assert schedule.fire_times(
            x + timedelta(microseconds=1), t + timedelta(days=1), limit=1
        ) == [t]


def test_docstring_examples():
    failures, tried = doctest.testmod(schedule_module)
    assert tried >= 5 and failures == 0
