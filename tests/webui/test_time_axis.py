"""Round ticks (webui/time_axis.py), the Gantt chart's segments from tries
(webui/gantt.py) and how a try ended in words (webui/try_view.py): pure code."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as NS

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webui.formatting import bytes_text
from webui.gantt import gantt, segments
from webui.time_axis import clock_ticks, relative_ticks, step_for, tick_text
from webui.try_view import exit_reason, exit_reasons

T0 = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
ROUND = {1, 2, 5}


def test_ticks_fall_on_round_values():
    # the example: a 9.1 s run had ticks at 0.0s 3.0s 6.1s 9.1s
    assert [tick_text(s, step_for(9.1)) for s in relative_ticks(9.1)] == [
        "0 s", "2 s", "4 s", "6 s", "8 s",
    ]  # fmt: skip
    assert [tick_text(s, 5) for s in relative_ticks(18.3)] == ["0 s", "5 s", "10 s", "15 s"]
    assert [tick_text(s, 120) for s in relative_ticks(600)] == [
        "0 s", "2 m", "4 m", "6 m", "8 m", "10 m",
    ]  # fmt: skip
    assert [tick_text(s, 0.1) for s in relative_ticks(0.35)] == ["0 s", "0.1 s", "0.2 s", "0.3 s"]
    assert tick_text(90, 30) == "1 m 30 s" and tick_text(5400, 1800) == "1 h 30 m"
    assert tick_text(0.02, 0.01) == "20 ms"
    assert step_for(0) == 1.0 and step_for(float("nan")) == 1.0 and step_for(-5) == 1.0


@given(st.floats(min_value=0.001, max_value=400 * 86400, allow_nan=False))
def test_every_step_is_round_and_keeps_the_ticks_few(total):
    step = step_for(total)
    ticks = relative_ticks(total)
    assert 2 <= len(ticks) <= 7 or total < step  # at most 6 intervals
    assert ticks[0] == 0 and ticks[-1] <= total * (1 + 1e-9) + 1e-9
    if step < 60:  # 1-2-5 steps (and 15 s, 30 s)
        mantissa = round(step / 10 ** math.floor(math.log10(step)), 6)
        assert mantissa in ROUND | {1.5, 3.0} or step in (15, 30)
    elif step < 86400:
        assert step in (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
    else:
        assert (step / 86400) in {1, 2, 5, 10, 20, 50, 100, 200, 500}


def test_wall_clock_ticks_fall_on_round_times_of_day_in_the_dags_zone():
    start = datetime(2026, 1, 1, 10, 13, 7, tzinfo=UTC)
    ticks = clock_ticks(start, 600, "Europe/Berlin")
    assert [label for _, label in ticks] == ["11:14", "11:16", "11:18", "11:20", "11:22"]
    assert ticks[0][0] == 53  # seconds after the start: 10:14:00 UTC
    short = clock_ticks(start, 20, "UTC")
    assert [label for _, label in short] == ["10:13:10", "10:13:15", "10:13:20", "10:13:25"]
    # across a DST change the ticks stay evenly spaced in real time, on the wall clock
    spring = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)  # 01:30 CET; 02:00 CET is 03:00 CEST
    ticks = clock_ticks(spring, 3 * 3600, "Europe/Berlin")
    assert [label for _, label in ticks] == [
        "01:30",
        "03:00",
        "03:30",
        "04:00",
        "04:30",
        "05:00",
        "05:30",
    ]
    assert [x for x, _ in ticks] == [k * 1800.0 for k in range(7)]
    autumn = clock_ticks(datetime(2026, 10, 25, 0, 0, tzinfo=UTC), 3 * 3600, "Europe/Berlin")
    assert [label for _, label in autumn][:5] == ["02:00", "02:30", "02:00", "02:30", "03:00"]
    days = clock_ticks(datetime(2026, 1, 1, 7, tzinfo=UTC), 10 * 86400, "UTC")
    assert [label for _, label in days][:2] == ["2026-01-03", "2026-01-05"]


def tr(n, state, start, end, lost=None):
    return NS(task_id="t", map_index=-1, try_number=n, state=state, lost_reason=lost, exit_status=None,
              start_date=T0 + timedelta(seconds=start),
              end_date=None if end is None else T0 + timedelta(seconds=end))  # fmt: skip


def test_a_retry_waits_its_back_off_then_its_queue_time():
    tries = [tr(1, "failed", 0, 5), tr(2, "success", 20, 30)]
    segs = segments("t", tries, T0, T0 + timedelta(minutes=1),
                    backoff=lambda task, index, failed: timedelta(seconds=12))  # fmt: skip
    assert [(k, (a - T0).seconds, (b - T0).seconds) for k, _, a, b in segs] == [
        ("running", 0, 5), ("backoff", 5, 17), ("queued", 17, 20), ("running", 20, 30),
    ]  # fmt: skip


def test_a_lost_try_is_queued_again_at_once_and_not_counted_in_the_back_off():
    asked = []

    def backoff(task, index, failed):
        asked.append(failed)
        return timedelta(seconds=4)

    tries = [
        tr(1, "lost", 0, 5, lost="lease_expired"),
        tr(2, "failed", 6, 8),
        tr(3, "success", 12, 13),
    ]
    segs = segments("t", tries, T0, T0 + timedelta(minutes=1), backoff=backoff)
    assert [k for k, *_ in segs] == ["running", "queued", "running", "backoff", "running"]
    assert asked == [1]  # try 2 was the task's first failure


def test_a_pending_retry_a_waiting_sensor_and_a_deferred_try():
    now = T0 + timedelta(seconds=30)
    failed = [tr(1, "failed", 0, 5)]
    line = NS(state="up_for_retry", ready_at=T0 + timedelta(seconds=40))
    segs = segments("t", failed, T0, now, line=line)
    assert [(k, (b - a).seconds) for k, _, a, b in segs] == [("running", 5), ("backoff", 25)]
    due = NS(state="up_for_retry", ready_at=T0 + timedelta(seconds=20))  # due, not claimed
    assert [k for k, *_ in segments("t", failed, T0, now, line=due)] == [
        "running", "backoff", "queued",
    ]  # fmt: skip
    poked = [tr(1, "up_for_reschedule", 0, 2)]
    waiting = NS(state="up_for_reschedule", ready_at=T0 + timedelta(seconds=60))
    segs = segments("t", poked, T0, now, line=waiting)
    assert [(k, s) for k, s, *_ in segs] == [
        ("running", "up_for_reschedule"), ("rescheduled", "up_for_reschedule"),
    ]  # fmt: skip
    deferred = [tr(1, "deferred", 0, None)]
    segs = segments("t", deferred, T0, now, deferred_since=T0 + timedelta(seconds=3))
    assert [(k, (a - T0).seconds, (b - T0).seconds) for k, _, a, b in segs] == [
        ("running", 0, 3), ("deferred", 3, 30),
    ]  # fmt: skip


def test_the_chart_puts_group_rows_before_their_tasks_and_folds_instances():
    run = NS(start_date=T0)
    lines = [NS(task_id="a", state="success", end_date=T0 + timedelta(seconds=10), ready_at=None),
             NS(task_id="g.b", state="success", end_date=T0 + timedelta(seconds=40), ready_at=None),
             NS(task_id="g.m", state="running", end_date=None, ready_at=None)]  # fmt: skip
    tries = [tr(1, "success", 0, 10), tr(1, "success", 12, 40), tr(1, "running", 12, None)]
    for t, task_id in zip(tries, ["a", "g.b", "g.m"], strict=False):
        t.task_id = task_id
    tries[2].map_index = 0  # the mapped task's summary try (webui/mapped.py)
    inst = [NS(task_id="g.m", map_index=i, state="success", ready_at=None) for i in range(2)]
    inst_tries = [NS(task_id="g.m", map_index=i, try_number=1, state="success", lost_reason=None,
                     start_date=T0 + timedelta(seconds=12 + i), end_date=T0 + timedelta(seconds=20))
                  for i in range(2)]  # fmt: skip
    chart = gantt(run, lines, tries, ["a", "g.b", "g.m"], {"g.b": ("a",), "g.m": ("a",)},
                  T0 + timedelta(seconds=45), groups={"g.b": "g", "g.m": "g"},
                  instances=(inst, inst_tries), map_counts={"g.m": {"success": 2}})  # fmt: skip
    assert [(r.kind, r.task_id, r.depth) for r in chart.rows] == [
        ("task", "a", 0), ("group", "g", 0), ("task", "g.b", 1), ("mapped", "g.m", 1),
        ("instance", "g.m[0]", 2), ("instance", "g.m[1]", 2),
    ]  # fmt: skip
    group = chart.rows[1]
    assert [b.kind for b in group.bars] == ["group"] and group.state == "running"
    assert group.bars[0].x == pytest.approx(chart.rows[2].bars[0].x)  # from g.b's first wait
    # instance rows take no room until unfolded: the rows after them are not pushed down
    assert chart.rows[4].y == chart.rows[5].y == chart.rows[3].y + 26
    assert chart.instances_shown == {"g.m": 2}
    assert chart.seconds == 50  # 45 s rounded up to the next 10 s tick
    assert [t.label for t in chart.ticks] == ["0 s", "10 s", "20 s", "30 s", "40 s", "50 s"]
    assert [t.label for t in chart.clock][:2] == ["10:00:00", "10:00:10"]


def test_how_each_try_ended():
    t = tr(1, "failed", 0, 5)
    assert exit_reason(t, later=True, instance_state="success") == "failed, retried"
    assert exit_reason(t, later=False, instance_state="up_for_retry") == "failed, retry pending"
    assert exit_reason(t, later=False, instance_state="failed") == "failed, no retries left"
    lost = tr(1, "lost", 0, 5, lost="lease_expired")
    assert (
        exit_reason(lost, later=True, instance_state="running") == "lost: lease expired, run again"
    )
    crashed = NS(**{**vars(tr(2, "crashed", 0, 5)), "exit_status": -9})
    assert exit_reason(crashed, later=False, instance_state="failed") == (
        "crashed, no retries left (exit status -9)"
    )
    tries = [NS(**{**vars(tr(1, "timeout", 0, 5)), "exit_status": None}),
             NS(**{**vars(tr(2, "marked_success", 6, 7)), "exit_status": None})]  # fmt: skip
    assert exit_reasons(tries, "success") == {
        1: "timed out, retried",
        2: "marked success by a user",
    }
    running = NS(**{**vars(tr(3, "running", 0, None)), "exit_status": None})
    assert exit_reason(running, later=False, instance_state="running") == "running"


def test_sizes_are_readable():
    assert [bytes_text(n) for n in (None, 0, 1023, 1024, 1536, 20 * 1024, 5 * 1024**3)] == [
        "", "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "20 KiB", "5.0 GiB",
    ]  # fmt: skip
