"""The misfire planner (orchestrator.scheduling.misfire.plan): which missed fire times become
runs under backfill / coalesce / skip, grace, catchup_window, and new vs changed DAGs."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.scheduling import misfire
from orchestrator.scheduling.misfire import Plan, plan
from orchestrator.scheduling.schedule import parse_schedule

START = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
GRACE = timedelta(minutes=5)


def hourly(start: datetime = START, end: datetime | None = None):
    return parse_schedule(timedelta(hours=1), start=start, end=end)


def at(hours: float) -> datetime:
    return START + timedelta(hours=hours)


def go(policy, cursor, now, *, schedule=None, grace=GRACE, window=None, history=False, batch=500):
    return plan(
        schedule or hourly(),
        policy,
        cursor,
        now,
        grace=grace,
        catchup_window=window,
        has_history=history,
        batch=batch,
    )


def kinds(p: Plan) -> list[str]:
    return [kind for kind, _ in p.decisions]


# --------------------------------------------------------------------------- policies


def test_backfill_runs_every_missed_fire_time_oldest_first():
    p = go("backfill", at(0), at(5.5))
    assert p.fire_times == [at(h) for h in range(6)]
    assert p.new_cursor == at(6)
    assert p.decisions == []


def test_coalesce_runs_only_the_latest_and_records_the_rest():
    p = go("coalesce", at(0), at(5.5))
    assert p.fire_times == [at(5)]
    assert p.new_cursor == at(6)
    assert kinds(p) == ["fire_coalesced"]
    assert at(0).isoformat() in p.decisions[0][1] and at(5).isoformat() in p.decisions[0][1]


def test_coalesce_of_a_single_due_fire_time_records_nothing():
    p = go("coalesce", at(3), at(3.01))
    assert p.fire_times == [at(3)] and p.new_cursor == at(4) and p.decisions == []


def test_skip_drops_old_misses_and_says_so():
    p = go("skip", at(0), at(5.5))
    assert p.fire_times == []
    assert p.new_cursor == at(6)
    assert kinds(p) == ["fire_skipped"]


def test_skip_runs_a_fire_time_noticed_within_grace():
    p = go("skip", at(0), at(5) + timedelta(minutes=3))
    assert p.fire_times == [at(5)]
    assert p.new_cursor == at(6)
    assert kinds(p) == ["fire_skipped"]  # 00:00 .. 04:00 were skipped


def test_skip_grace_boundary():
    assert go("skip", at(5), at(5) + GRACE).fire_times == [at(5)]
    late = go("skip", at(5), at(5) + GRACE + timedelta(seconds=1))
    assert late.fire_times == [] and kinds(late) == ["fire_skipped"]


def minutely():
    return parse_schedule("* * * * *", start=START)


@pytest.mark.parametrize(
    ("policy", "runs"),
    [("skip", [4]), ("coalesce", [4]), ("backfill", [0, 1, 2, 3, 4])],
)
@pytest.mark.parametrize("cursor", [None, START], ids=["new_dag", "behind"])
def test_fire_times_due_inside_the_grace_give_one_run_under_skip_and_coalesce(policy, runs, cursor):
    # a minutely DAG decided at 00:04:30: five fire times are due, all inside the
    # 5-minute grace; skip used to make a run for each of them
    now = START + timedelta(minutes=4, seconds=30)
    p = go(policy, cursor, now, schedule=minutely())
    assert p.fire_times == [START + timedelta(minutes=m) for m in runs]
    assert p.new_cursor == START + timedelta(minutes=5)
    if policy == "skip":
        [(kind, message)] = p.decisions
        assert kind == "fire_skipped"
        assert f"from {START.isoformat()} to before {p.fire_times[0].isoformat()}" in message
    assert go(policy, p.new_cursor, now, schedule=minutely()) is None  # nothing left due


def test_skip_of_a_latest_fire_time_outside_the_grace_runs_nothing():
    now = START + timedelta(minutes=4, seconds=30)
    p = go("skip", START, now, schedule=minutely(), grace=timedelta(seconds=20))
    assert p.fire_times == [] and kinds(p) == ["fire_skipped"]
    assert p.new_cursor == START + timedelta(minutes=5)


def test_many_new_minutely_skip_dags_make_one_run_each():
    now, schedule = START + timedelta(minutes=4, seconds=59), minutely()
    runs = sum(len(go("skip", None, now, schedule=schedule).fire_times) for _ in range(300))
    assert runs == 300  # not 1,500 (2,000 such DAGs made 10,000 runs)


@pytest.mark.parametrize("policy", ["backfill", "coalesce", "skip"])
def test_on_time_fire_is_just_run(policy):
    p = go(policy, at(2), at(2))
    assert p.fire_times == [at(2)] and p.new_cursor == at(3) and p.decisions == []


@pytest.mark.parametrize("policy", ["backfill", "coalesce", "skip"])
def test_nothing_due_means_no_write(policy):
    assert go(policy, at(3), at(2.5)) is None


@pytest.mark.parametrize("policy", ["backfill", "coalesce", "skip"])
def test_manual_dag_never_plans(policy):
    assert go(policy, None, at(10), schedule=parse_schedule(None, start=None)) is None


# --------------------------------------------------------------------------- new vs changed


@pytest.mark.parametrize("policy", ["backfill", "coalesce", "skip"])
def test_new_dag_starts_at_its_first_fire_time(policy):
    p = go(policy, None, at(2.5), history=False)
    expected = {"backfill": [at(0), at(1), at(2)], "coalesce": [at(2)], "skip": []}[policy]
    assert p.fire_times == expected
    assert p.new_cursor == at(3)


@pytest.mark.parametrize("policy", ["backfill", "coalesce", "skip"])
def test_changed_schedule_never_runs_its_own_past(policy):
    p = go(policy, None, at(2.5), history=True)
    assert p.fire_times == []
    assert p.new_cursor == at(3)  # initialised, so the store writes the cursor
    assert p.decisions == []


def test_new_dag_whose_start_is_in_the_future_only_sets_the_cursor():
    p = go("backfill", None, START - HOUR)
    assert p == Plan([], at(0))


# --------------------------------------------------------------------------- catchup_window


@pytest.mark.parametrize("policy", ["backfill", "coalesce", "skip"])
def test_catchup_window_drops_old_fire_times_whatever_the_policy(policy):
    p = go(policy, at(0), at(10.5), window=timedelta(hours=3))
    assert kinds(p)[0] == "fire_expired"
    assert all(t >= at(7.5) for t in p.fire_times)
    expected = {"backfill": [at(8), at(9), at(10)], "coalesce": [at(10)], "skip": []}[policy]
    assert p.fire_times == expected
    assert p.new_cursor == at(11)


def test_catchup_window_keeps_a_fire_time_exactly_on_its_edge():
    p = go("backfill", at(0), at(10), window=timedelta(hours=3))
    assert p.fire_times == [at(7), at(8), at(9), at(10)]


def test_catchup_window_not_reached_changes_nothing():
    p = go("backfill", at(0), at(2.5), window=timedelta(hours=3))
    assert p.fire_times == [at(0), at(1), at(2)] and p.decisions == []


# --------------------------------------------------------------------------- many misses


def test_ten_thousand_missed_hourly_fires_backfill_in_batches():
    now = at(9_999) + timedelta(minutes=30)
    cursor, seen, calls = None, [], 0
    while True:
        p = go("backfill", cursor, now, batch=500)
        if p is None:
            break
        calls += 1
        assert len(p.fire_times) <= 500
        if cursor is not None:
            assert p.new_cursor > cursor  # the cursor always advances
            assert p.fire_times[0] == cursor
        if p.fire_times:
            assert p.new_cursor > p.fire_times[-1]
        seen.extend(p.fire_times)
        cursor = p.new_cursor
        assert calls < 100
    assert calls == 20
    assert len(seen) == 10_000
    assert len(set(seen)) == len(seen)  # never the same fire time twice
    assert seen == sorted(seen) and seen[0] == at(0) and seen[-1] == at(9_999)
    assert cursor == at(10_000)


@pytest.mark.parametrize("policy", ["coalesce", "skip"])
def test_ten_thousand_missed_fires_collapse_in_one_step(policy):
    now = at(9_999) + timedelta(minutes=2)
    p = go(policy, at(0), now)
    assert p.fire_times == [at(9_999)]  # skip: within grace, so it runs
    assert p.new_cursor == at(10_000)
    assert go(policy, p.new_cursor, now) is None


@pytest.mark.parametrize("policy", ["backfill", "coalesce", "skip"])
def test_cursor_always_advances_and_no_fire_time_repeats_over_a_walk(policy):
    """Tick irregularly through three days; every fire time is planned at most once
    and, for backfill, exactly once."""
    cursor, seen = None, []
    now = START - timedelta(minutes=10)
    step = [timedelta(minutes=m) for m in (7, 61, 200, 1, 59, 600, 3)]
    for i in range(200):
        p = go(policy, cursor, now, batch=3)
        if p is not None:
            if cursor is not None:
                assert p.new_cursor is None or p.new_cursor > cursor
            seen.extend(p.fire_times)
            assert all(t <= now for t in p.fire_times)
            cursor = p.new_cursor
        now += step[i % len(step)]
    assert len(seen) == len(set(seen))
    if policy == "backfill":
        last = cursor - HOUR
        assert seen == [at(h) for h in range(int((last - START) / HOUR) + 1)]


def test_end_date_stops_planning():
    schedule = hourly(end=at(3))
    p = go("backfill", None, at(10), schedule=schedule)
    assert p.fire_times == [at(0), at(1), at(2), at(3)]
    assert p.new_cursor is None


def test_doctests():
    assert doctest.testmod(misfire).failed == 0
