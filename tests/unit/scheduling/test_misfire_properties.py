"""Property tests (hypothesis) of the pure misfire planner: for any schedule, any
downtime (irregular ticks with a gap) and any policy, the runs created equal a list
computed independently here; no fire time twice; the cursor only moves forward."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.scheduling.misfire import plan
from orchestrator.scheduling.schedule import parse_schedule

START = datetime(2026, 1, 1, tzinfo=UTC)
MIN = timedelta(minutes=1)


def fire_grid(step: timedelta, until: datetime) -> list[datetime]:
    """The oracle's fire times: start + k*step (an interval or an every-N-minutes cron)."""
    out, t = [], START
    while t <= until:
        out.append(t)
        t += step
    return out


def expected(policy, grid, ticks, grace, window):
    """What each tick should create, from the definitions alone."""
    out, handled = [], None
    for now in ticks:
        due = [t for t in grid if t <= now and (handled is None or t > handled)]
        if not due:
            continue
        handled = max(due)
        kept = [t for t in due if window is None or t >= now - window]
        if policy == "backfill":
            out += kept
        elif policy == "coalesce":
            out += kept[-1:]
        else:  # skip: at most the latest, if it is inside the grace
            out += [t for t in kept[-1:] if now - t <= grace]
    return out


@settings(max_examples=150, deadline=None, database=None)
@given(
    policy=st.sampled_from(["backfill", "coalesce", "skip"]),
    kind=st.sampled_from(["interval", "cron"]),
    step_minutes=st.sampled_from([15, 30, 60, 180]),
    gaps=st.lists(st.integers(1, 600), min_size=1, max_size=30),
    downtime=st.integers(0, 5000),
    down_at=st.integers(0, 29),
    grace=st.integers(0, 120),
    window=st.one_of(st.none(), st.integers(1, 3000)),
    batch=st.integers(1, 50),
)
def test_created_runs_equal_the_independent_expectation(
    policy, kind, step_minutes, gaps, downtime, down_at, grace, window, batch
):
    step = timedelta(minutes=step_minutes)
    if kind == "interval":
        schedule = parse_schedule(step, start=START)
    else:
        cron = (
            f"*/{step_minutes} * * * *" if step_minutes < 60 else f"0 */{step_minutes // 60} * * *"
        )
        schedule = parse_schedule(cron, start=START)
    grace_td = grace * MIN
    window_td = None if window is None else window * MIN
    ticks, now = [], START - 5 * MIN
    for i, g in enumerate(gaps):  # irregular ticks, one long downtime among them
        now += g * MIN + (downtime * MIN if i == down_at else timedelta(0))
        ticks.append(now)

    cursor, created = None, []
    for now in ticks:
        for _ in range(10_000):  # one tick may take several bounded batches
            p = plan(
                schedule,
                policy,
                cursor,
                now,
                grace=grace_td,
                catchup_window=window_td,
                has_history=False,
                batch=batch,
            )
            if p is None:
                break
            bound = {"backfill": batch, "coalesce": 1}.get(policy)
            assert bound is None or len(p.fire_times) <= bound  # bounded work per call
            assert all(t <= now for t in p.fire_times)
            if cursor is not None and p.new_cursor is not None:
                assert p.new_cursor > cursor  # monotonic catch-up
            if p.fire_times:
                assert p.new_cursor is None or p.new_cursor > p.fire_times[-1]
            created += p.fire_times
            if p.new_cursor == cursor:
                break
            cursor = p.new_cursor
            if cursor is None or cursor > now:
                break

    want = expected(policy, fire_grid(step, ticks[-1]), ticks, grace_td, window_td)
    assert created == want
    assert len(created) == len(set(created))  # no fire time twice
    assert created == sorted(created)


@settings(max_examples=150, deadline=None, database=None)
@given(
    expr=st.sampled_from(
        ["@hourly", "30 * * * *", "0 */3 * * *", "30 2 * * *", "*/20 1-3 * * *", "0 0 * * 0"]
    ),
    interval_minutes=st.one_of(st.none(), st.sampled_from([7, 60, 1440])),
    timezone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]),
    start_hours=st.integers(0, 24 * 365),
    policy=st.sampled_from(["backfill", "coalesce", "skip"]),
    span_hours=st.integers(0, 24 * 40),
    batch=st.integers(1, 200),
)
def test_plan_data_intervals_equal_the_schedules_own(
    expr, interval_minutes, timezone, start_hours, policy, span_hours, batch
):
    """``data_intervals`` derives each interval from the fire time before it: the same
    as asking the schedule for every one, across DST changes too."""
    from orchestrator.scheduling.misfire import data_intervals

    start = START + timedelta(hours=start_hours)
    raw = timedelta(minutes=interval_minutes) if interval_minutes else expr
    schedule = parse_schedule(raw, timezone=timezone, start=start)
    now = start + timedelta(hours=span_hours, minutes=17)
    p = plan(
        schedule,
        policy,
        None,
        now,
        grace=timedelta(hours=6),
        catchup_window=None,
        has_history=False,
        batch=batch,
    )
    assert p is not None
    got = data_intervals(schedule, p.fire_times)
    assert got == [(t, schedule.data_interval(t)) for t in p.fire_times]
