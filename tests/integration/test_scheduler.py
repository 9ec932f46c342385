"""The scheduler on both backends: leader lease, run uniqueness, trigger rules, slots."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest

from orchestrator.engine.scheduler import Scheduler
from orchestrator.store import Store
from tests.helpers import Harness


@pytest.fixture
def other_store(settings):
    s = Store(settings.database_url)
    yield s
    s.dispose()


HOURLY = """
from datetime import datetime, timedelta, timezone
from orchestrator import DAG, task

with DAG("hourly", schedule=timedelta(hours=1), misfire="backfill",
         start_date=datetime(2026, 1, 1, tzinfo=timezone.utc)) as dag:
    @task
    def only(ctx):
        return 1
"""


def test_only_the_leader_acts_and_a_standby_takes_over_after_expiry(
    harness, write_dag, other_store, settings, clock
):
    write_dag("hourly.py", HOURLY)
    harness.parse()
    first = Scheduler(harness.store, clock, settings, scheduler_id="s1")
    second = Scheduler(other_store, clock, settings, scheduler_id="s2")

    result = first.tick(clock.now())
    assert result.leader and result.runs_created == 1
    assert harness.store.leader()[:2] == ("s1", 1)
    clock.advance(seconds=10)
    manual = harness.store.trigger_run("hourly", clock.now())
    assert second.tick(clock.now()).leader is False
    assert harness.store.get_run(manual.run_id).state == "queued"  # the standby did nothing

    # s1 renews (same epoch) and acts; then it stops ticking and its lease runs out
    assert first.tick(clock.now()).leader
    assert harness.store.leader()[:2] == ("s1", 1)
    assert harness.store.get_run(manual.run_id).state == "running"
    clock.advance(timedelta(seconds=settings.lease_seconds - 1))
    assert second.tick(clock.now()).leader is False
    clock.advance(seconds=2)
    taken = second.tick(clock.now())
    assert taken.leader
    holder, epoch, expires = harness.store.leader()
    assert (holder, epoch) == ("s2", 2)
    assert expires == clock.now() + timedelta(seconds=settings.lease_seconds)
    assert first.tick(clock.now()).leader is False  # the old leader now stands by
    events = harness.store.events(kind="leader_acquired")
    assert [e.message.split(";")[0] for e in reversed(events)] == [
        "scheduler s1 became leader (epoch 1)",
        "scheduler s2 became leader (epoch 2)",
    ]
    assert "s1's lease expired at" in events[0].message
    # releasing hands over at once, with a new epoch
    second.store.release_leadership("s2")
    assert first.tick(clock.now()).leader
    assert harness.store.leader()[:2] == ("s1", 3)


def test_stale_schedule_cursor_creates_nothing(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("hourly.py", HOURLY)
    harness.parse()
    harness.tick()
    dag = store.get_dag("hourly")
    cursor = dag.next_logical_date
    assert cursor == clock.now() + timedelta(hours=1)
    fire = (cursor, (cursor - timedelta(hours=1), cursor))
    stale = dict(
        new_cursor=cursor + timedelta(hours=1),
        fire_times=[fire],
        decisions=[("fire_skipped", "x")],
        now=clock.now(),
    )
    assert store.create_scheduled_runs("hourly", dag.version_hash, cursor=None, **stale) == 0
    assert (
        store.create_scheduled_runs(
            "hourly", dag.version_hash, cursor=cursor - timedelta(hours=1), **stale
        )
        == 0
    )
    assert len(store.list_runs("hourly")) == 1
    assert store.get_dag("hourly").next_logical_date == cursor
    assert store.events(kind="fire_skipped") == []
    # the current cursor moves, exactly once
    assert store.create_scheduled_runs("hourly", dag.version_hash, cursor=cursor, **stale) == 1
    assert store.create_scheduled_runs("hourly", dag.version_hash, cursor=cursor, **stale) == 0
    assert store.get_dag("hourly").next_logical_date == cursor + timedelta(hours=1)


def test_two_schedulers_racing_never_create_two_runs_for_one_fire_time(
    harness, write_dag, other_store, settings, clock
):
    write_dag("hourly.py", HOURLY)
    harness.parse()
    schedulers = [
        Scheduler(s, clock, settings, scheduler_id=f"s{i}", batch=7)
        for i, s in enumerate([harness.store, other_store] * 2)
    ]
    errors: list[BaseException] = []

    def step(s: Scheduler, barrier: threading.Barrier, now) -> None:
        try:
            barrier.wait()
            s.schedule_dags(now)  # bypasses the leader lease on purpose
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    for _ in range(6):
        clock.advance(hours=5)
        barrier = threading.Barrier(len(schedulers))
        threads = [
            threading.Thread(target=step, args=(s, barrier, clock.now())) for s in schedulers
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    runs = harness.store.list_runs("hourly", limit=1000)
    dates = Counter(r.logical_date for r in runs)
    assert max(dates.values()) == 1
    # backfill: every hour from the start up to the last cursor, none missed
    cursor = harness.store.get_dag("hourly").next_logical_date
    hours = int((cursor - min(dates)).total_seconds() // 3600)
    assert sorted(dates) == [min(dates) + timedelta(hours=h) for h in range(hours)]
    assert len(harness.store.events(kind="run_created", limit=1000)) == len(runs)


def test_two_schedulers_starting_runs_respect_max_active_runs(
    harness, write_dag, other_store, clock
):
    store = harness.store
    write_dag(
        "limited.py",
        """
        from orchestrator import DAG, task

        with DAG("limited", schedule=None, max_active_runs=2) as dag:
            @task
            def only(ctx):
                return 1
        """,
    )
    harness.parse()
    for i in range(12):
        store.trigger_run("limited", clock.now(), logical_date=clock.now() + timedelta(minutes=i))
    barrier = threading.Barrier(4)
    started: list[list[str]] = []

    def start(s: Store) -> None:
        barrier.wait()
        started.append(s.start_queued_runs(clock.now()))

    threads = [threading.Thread(target=start, args=(s,)) for s in (store, other_store) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flat = [r for batch in started for r in batch]
    assert len(flat) == 2 == len(set(flat))
    running = store.list_runs("limited", state="running")
    assert sorted(r.run_id for r in running) == sorted(flat)
    assert sorted(r.logical_date for r in running) == [
        clock.now(),
        clock.now() + timedelta(minutes=1),
    ]


TRIGGER_RULES = """
from orchestrator import DAG, task

with DAG("rules", schedule=None) as dag:
    @task
    def ok():
        return "ok"

    @task
    def bad():
        raise ValueError("bad on purpose")

    @task(trigger_rule="one_failed")
    def on_failure_of_ok():           # no upstream failed: skipped
        return 1

    @task
    def after_skip():                 # all_success over a skip: skipped
        return 1

    @task
    def all_success():                # upstream failed
        return 1

    @task(trigger_rule="all_done")
    def all_done():
        return 1

    @task(trigger_rule="one_failed")
    def one_failed():
        return 1

    @task(trigger_rule="none_failed")
    def none_failed_over_skip():      # success + skipped: runs
        return 1

    @task(trigger_rule="none_failed")
    def none_failed_over_failure():   # leaf: upstream_failed, so the run fails
        return 1

    @task(trigger_rule="always")
    def always():
        return 1

    ok >> on_failure_of_ok >> after_skip
    [ok, bad] >> all_success >> always
    [ok, bad] >> all_done
    [ok, bad] >> one_failed
    [ok, on_failure_of_ok] >> none_failed_over_skip
    bad >> none_failed_over_failure

with DAG("cleanup", schedule=None) as dag2:
    @task
    def work():
        raise ValueError("bad on purpose")

    @task(trigger_rule="all_done")
    def tidy():
        return 1

    work >> tidy
"""


def test_trigger_rules_with_failures_and_skips_end_to_end(harness, write_dag):
    write_dag("rules.py", TRIGGER_RULES)
    assert harness.parse().dags == 2
    run = harness.store.trigger_run("rules", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "failed"
    states = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    assert states == {
        "ok": "success",
        "bad": "failed",
        "on_failure_of_ok": "skipped",
        "after_skip": "skipped",
        "all_success": "upstream_failed",
        "all_done": "success",
        "one_failed": "success",
        "none_failed_over_skip": "success",
        "none_failed_over_failure": "upstream_failed",
        "always": "success",
    }
    ran = {t.task_id for t in harness.store.task_instances(run.run_id) if t.try_number}
    assert ran == {"ok", "bad", "all_done", "one_failed", "none_failed_over_skip", "always"}

    # a failure that a leaf with all_done absorbs leaves the run successful
    other = harness.store.trigger_run("cleanup", harness.clock.now())
    assert harness.run_until_finished(other.run_id).state == "success"
    states = {t.task_id: t.state for t in harness.store.task_instances(other.run_id)}
    assert states == {"work": "failed", "tidy": "success"}


@pytest.mark.parametrize(
    ("overlap", "running", "cancelled", "queued"),
    [
        ("queue", [0], [], [1, 2]),
        ("skip", [0], [1, 2], []),
        ("replace", [2], [0, 1], []),
        ("allow", [0], [], [1, 2]),  # allow: up to max_active_runs (here 1) at once
        ("buffer_one", [0], [2], [1]),  # one waits, the later one is skipped
    ],
)
def test_overlap_policy_decides_runs_beyond_max_active_runs(
    harness, write_dag, overlap, running, cancelled, queued
):
    store, clock = harness.store, harness.clock
    write_dag(
        "busy.py",
        f"""
        from orchestrator import DAG, task

        with DAG("busy", schedule=None, max_active_runs=1, overlap={overlap!r}) as dag:
            @task
            def first():
                return 1

            @task
            def second():
                return 2

            first >> second
        """,
    )
    harness.parse()
    t0 = clock.now()
    runs = [store.trigger_run("busy", t0)]
    harness.tick()
    [claim] = store.claim("w", clock.now(), timedelta(seconds=30), limit=5)
    assert claim.run_id == runs[0].run_id
    for i in (1, 2):
        runs.append(store.trigger_run("busy", t0, logical_date=t0 + timedelta(minutes=i)))
    harness.tick()
    by_state: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        by_state.setdefault(store.get_run(r.run_id).state, []).append(i)
    assert by_state.get("running", []) == running
    assert by_state.get("cancelled", []) == cancelled
    assert by_state.get("queued", []) == queued
    assert len(store.events(kind="run_cancelled")) == len(cancelled)
    for i in cancelled:
        tis = store.task_instances(runs[i].run_id)
        assert {t.state for t in tis} == {"cancelled"}
    if overlap == "replace":
        # the replaced run's worker loses its lease and its late report changes nothing
        assert store.tries(runs[0].run_id, "first")[0].state == "cancelled"
        held = {(claim.ti_id, claim.try_number)}
        assert store.heartbeat("w", held, clock.now(), timedelta(seconds=30)) == set()
        assert store.finish_success(claim, "1", clock.now()) is False
        assert store.task_instance(runs[0].run_id, "first").state == "cancelled"
        assert store.get_run(runs[0].run_id).state == "cancelled"


BUFFERED = """
from orchestrator import DAG, task

with DAG("buffered", schedule=None, overlap="buffer_one") as dag:
    @task
    def only():
        return 1
"""


def test_buffer_one_keeps_one_run_waiting_and_skips_the_rest_as_they_come(harness, write_dag):
    """Temporal's BUFFER_ONE: while a run is active at most one more waits; a run due
    while one already waits is skipped at once (with its reason), and once the active
    run ends the waiting one starts and the next due run may wait again."""
    store, clock = harness.store, harness.clock
    write_dag("buffered.py", BUFFERED)
    harness.parse()
    t0 = clock.now()

    def trigger(i: int) -> str:
        return store.trigger_run("buffered", t0, logical_date=t0 + timedelta(minutes=i)).run_id

    r0 = trigger(0)
    harness.tick()
    [claim] = store.claim("w", clock.now(), timedelta(seconds=30), limit=5)
    r1 = trigger(1)
    harness.tick()
    r2 = trigger(2)
    harness.tick()
    assert [store.get_run(r).state for r in (r0, r1, r2)] == ["running", "queued", "cancelled"]
    [skipped] = store.events(kind="run_cancelled")
    assert skipped.run_id == r2
    assert (
        skipped.message == "overlap='buffer_one': one active run and one waiting at most; skipped"
    )

    assert store.finish_success(claim, "1", clock.now())
    harness.tick()
    assert [store.get_run(r).state for r in (r0, r1)] == ["success", "running"]
    r3 = trigger(3)
    harness.tick()
    r4 = trigger(4)
    harness.tick()
    assert [store.get_run(r).state for r in (r1, r3, r4)] == ["running", "queued", "cancelled"]
    assert [e.run_id for e in store.events(kind="run_cancelled")] == [r4, r2]


def test_cancel_run_stops_its_tasks_once(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("hourly.py", HOURLY)
    harness.parse()
    run = store.trigger_run("hourly", clock.now())
    harness.tick()
    assert store.cancel_run(run.run_id, clock.now()) is True
    assert store.cancel_run(run.run_id, clock.now()) is False
    assert store.get_run(run.run_id).state == "cancelled"
    assert store.task_instance(run.run_id, "only").state == "cancelled"
    # only the scheduled run of the same fire time (not blocked by the manual one) is left
    claims = store.claim("w", clock.now(), timedelta(seconds=30), limit=5)
    assert [c.run_id for c in claims] == ["hourly__scheduled__20260101T000000Z"]
    assert harness.tick().runs_finished == []
    [event] = store.events(kind="run_cancelled")
    assert event.run_id == run.run_id and "user" in event.message


def test_an_exhausted_schedule_is_decided_once_not_every_tick(store, settings, clock, write_dag):
    """A DAG whose end_date passed before any run: one decision, then silence."""
    write_dag(
        "ended.py",
        """
        from datetime import UTC, datetime, timedelta
        from orchestrator import DAG, task

        with DAG("ended", schedule=timedelta(hours=1), misfire="skip",
                 start_date=datetime(2025, 1, 1, tzinfo=UTC),
                 end_date=datetime(2025, 1, 2, tzinfo=UTC)) as dag:
            @task
            def t(ctx):
                return None
        """,
    )
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        for _ in range(5):
            harness.tick()
            clock.advance(minutes=1)
    finally:
        harness.close()
    assert store.list_runs("ended") == []
    assert len(store.events(dag_id="ended", kind="fire_skipped")) == 1
    assert len(store.events(dag_id="ended", kind="schedule_exhausted")) == 1
    assert store.get_dag("ended").schedule_exhausted is True
