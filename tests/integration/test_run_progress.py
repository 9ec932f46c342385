"""Runs moving on, on both backends: bulk creation, starting with root tasks queued,
finishing that starts the next queued runs in the same transaction (the scheduler's
``finish_ready_runs`` and the worker-side ``advance_runs_locked``)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text

from orchestrator.engine.scheduler import Scheduler
from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.core.base import lock_runs

START = datetime(2026, 1, 1, tzinfo=UTC)
LEASE = timedelta(seconds=30)


def dag_source(dag_id: str, *, extra: str = "", schedule: str = "None") -> str:
    """A DAG of two roots (a, b) and c downstream of both."""
    return f"""
from datetime import datetime, timedelta, timezone
from orchestrator import DAG, task

with DAG("{dag_id}", schedule={schedule}, misfire="backfill", {extra}
         start_date=datetime(2026, 1, 1, tzinfo=timezone.utc)) as dag:
    @task
    def a(ctx):
        return 1

    @task
    def b(ctx):
        return 2

    @task
    def c(ctx):
        return 3

    a >> c
    b >> c
"""


def _states(store: Store, run_id: str) -> dict[str, str]:
    return {t.task_id: t.state for t in store.task_instances(run_id)}


def _trigger(store: Store, dag_id: str, n: int, now: datetime) -> list[str]:
    return [
        store.trigger_run(dag_id, now, logical_date=START + timedelta(minutes=i)).run_id
        for i in range(n)
    ]


def _run_all_tasks(store: Store, now: datetime, *, leave_runs: str | None = None) -> None:
    """Run every claimable task to success, as workers would (roots, then c).

    The successes of c finish their runs in the same transactions; with
    ``leave_runs=DAG_ID`` that DAG is paused meanwhile, so its runs stay running with
    every task finished (a paused DAG's runs are left to the scheduler).
    """
    for round_ in range(2):
        claims = store.claim("w", now, LEASE, limit=100)
        if leave_runs and round_ == 1:
            store.set_paused(leave_runs, True, now)
        for c in claims:
            assert store.finish_success(c, None, now)
        if leave_runs and round_ == 1:
            store.set_paused(leave_runs, False, now)
        store.release_ready(now)


def test_missed_runs_are_created_in_bulk_each_once_with_tasks_and_events(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("h.py", dag_source("h", schedule="timedelta(hours=1)"))
    harness.parse()
    # a backfill run already holds one of the fire times: it is left alone
    taken = START + timedelta(hours=5)
    store.create_backfill(
        "h",
        [(taken, (taken - timedelta(hours=1), taken))],
        clock.now(),
        start=taken,
        end=taken,
        max_active_runs=1,
    )
    clock.advance(hours=9, minutes=30)
    result = harness.tick()
    assert result.runs_created == 9  # 00:00 .. 09:00 but 05:00
    runs = store.list_runs("h", limit=100)
    assert sorted(r.logical_date for r in runs) == [START + timedelta(hours=h) for h in range(10)]
    assert {r.run_type for r in runs if r.logical_date == taken} == {"backfill"}
    created = [e.run_id for e in store.events(kind="run_created", limit=100)]
    assert len(created) == len(set(created)) == 10  # one per run, the backfill's included
    for r in runs:
        assert set(_states(store, r.run_id)) == {"a", "b", "c"}
        assert r.data_interval_end - r.data_interval_start == timedelta(hours=1)
        assert r.logical_date.tzinfo is not None and r.created_at.tzinfo is not None
    assert store.get_dag("h").next_logical_date == START + timedelta(hours=10)


def test_starting_a_run_queues_its_root_tasks_and_wakes_workers(harness, write_dag, settings):
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d"))
    harness.parse()
    [run_id] = _trigger(store, "d", 1, clock.now())
    woken = threading.Event()
    scheduler = Scheduler(store, clock, settings, scheduler_id="s", on_release=woken)
    result = scheduler.tick(clock.now())
    assert result.runs_started == [run_id]
    assert result.released == 2 and woken.is_set()
    ti = store.task_instance(run_id, "a")
    assert ti.ready_at == clock.now()
    assert _states(store, run_id) == {"a": "queued", "b": "queued", "c": "scheduled"}


def test_a_leaf_success_finishes_its_run_and_starts_the_next_in_one_transaction(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", extra="max_active_runs=2,"))
    harness.parse()
    runs = _trigger(store, "d", 5, clock.now())
    assert store.start_queued_runs(clock.now()) == runs[:2]
    _run_all_tasks(store, clock.now())  # the workers' successes of c finish both runs
    _assert_two_finished_two_started(store, runs)
    advanced = store.finish_ready_runs(clock.now())  # nothing left for the scheduler
    assert advanced.finished == [] and advanced.started.run_ids == []


def test_the_scheduler_finishes_runs_and_starts_the_queued_ones_in_one_transaction(
    harness, write_dag
):
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", extra="max_active_runs=2,"))
    harness.parse()
    runs = _trigger(store, "d", 5, clock.now())
    assert store.start_queued_runs(clock.now()) == runs[:2]
    _run_all_tasks(store, clock.now(), leave_runs="d")
    assert [store.get_run(r).state for r in runs[:2]] == ["running", "running"]
    clock.advance(seconds=1)
    advanced = store.finish_ready_runs(clock.now())
    assert advanced.finished == [(runs[0], "success"), (runs[1], "success")]
    assert advanced.started.run_ids == runs[2:4] and advanced.started.tasks_queued == 4
    assert not advanced.needs_scheduler
    _assert_two_finished_two_started(store, runs)


def _assert_two_finished_two_started(store: Store, runs: list[str]) -> None:
    """Five runs, max_active_runs=2: the first two done, the next two started."""
    assert [store.get_run(r).state for r in runs] == [
        "success",
        "success",
        "running",
        "running",
        "queued",
    ]
    assert _states(store, runs[2]) == {"a": "queued", "b": "queued", "c": "scheduled"}
    assert len(store.events(kind="run_success")) == 2


def test_a_failed_leaf_fails_the_run_and_still_frees_its_slot(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", extra="max_active_runs=1, default_retries=0,"))
    harness.parse()
    runs = _trigger(store, "d", 2, clock.now())
    store.start_queued_runs(clock.now())
    for c in store.claim("w", clock.now(), LEASE, limit=10):
        assert store.finish_success(c, None, clock.now())
    store.release_ready(clock.now())
    [c] = store.claim("w", clock.now(), LEASE, limit=10)
    store.finish_failure(c, "boom", 1, clock.now())
    advanced = store.finish_ready_runs(clock.now())
    assert advanced.finished == [(runs[0], "failed")]
    assert advanced.started.run_ids == [runs[1]]


def test_advancing_inside_a_finishing_transaction(harness, write_dag):
    """What a worker's finishing transaction does after recording a leaf's success."""
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", extra="max_active_runs=1,"))
    harness.parse()
    runs = _trigger(store, "d", 2, clock.now())
    store.start_queued_runs(clock.now())
    first = store.get_run(runs[0])
    with store.write() as conn:  # nothing finished yet: nothing happens
        lock_runs(conn, [first.id], store.is_postgres)
        advanced = store.advance_runs_locked(conn, [first.id], clock.now())
    assert advanced.finished == [] and advanced.started.run_ids == []
    assert not advanced.needs_scheduler
    _run_all_tasks(store, clock.now(), leave_runs="d")
    with store.write() as conn:
        lock_runs(conn, [first.id], store.is_postgres)
        advanced = store.advance_runs_locked(conn, [first.id], clock.now())
    assert advanced.finished == [(runs[0], "success")]
    assert advanced.started.run_ids == [runs[1]] and advanced.started.tasks_queued == 2
    assert not advanced.needs_scheduler
    # already finished: a second call changes nothing
    with store.write() as conn:
        advanced = store.advance_runs_locked(conn, [first.id], clock.now())
    assert advanced.finished == [] and len(store.events(kind="run_success")) == 1


def test_advancing_leaves_cancels_to_the_scheduler(harness, write_dag):
    """overlap="replace" would cancel a run: a transaction holding run rows does not."""
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", extra='overlap="replace", max_active_runs=1,'))
    harness.parse()
    [old] = _trigger(store, "d", 1, clock.now())
    store.start_queued_runs(clock.now())
    _run_all_tasks(store, clock.now(), leave_runs="d")
    for i in (1, 2):  # two newer runs wait: the newest wins, the other is cancelled
        store.trigger_run("d", clock.now(), logical_date=START + timedelta(hours=i))
    pk = store.get_run(old).id
    with store.write() as conn:
        lock_runs(conn, [pk], store.is_postgres)
        advanced = store.advance_runs_locked(conn, [pk], clock.now())
    assert advanced.finished == [(old, "success")]
    assert advanced.started.run_ids == [] and advanced.needs_scheduler
    assert [r.state for r in store.list_runs("d")] == ["queued", "queued", "success"]
    harness.tick()  # the scheduler's start_runs holds no run row: it cancels and starts
    assert [r.state for r in store.list_runs("d")] == ["running", "cancelled", "success"]


def test_a_finished_backfill_run_or_a_paused_dag_is_for_the_scheduler(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", schedule="timedelta(hours=1)", extra="paused=True,"))
    harness.parse()
    t = START + timedelta(hours=2)
    store.create_backfill(
        "d", [(t, (t - timedelta(hours=1), t))], clock.now(), start=t, end=t, max_active_runs=1
    )
    [manual] = _trigger(store, "d", 1, clock.now())
    store.set_paused("d", False, clock.now())
    store.start_queued_runs(clock.now())
    [run] = [r for r in store.list_runs("d") if r.run_type == "backfill"]
    _run_all_tasks(store, clock.now(), leave_runs="d")
    store.set_paused("d", True, clock.now())
    with store.write() as conn:
        pks = [run.id, store.get_run(manual).id]
        lock_runs(conn, pks, store.is_postgres)
        advanced = store.advance_runs_locked(conn, pks, clock.now())
    assert sorted(advanced.finished) == sorted([(run.run_id, "success"), (manual, "success")])
    assert advanced.started.run_ids == []
    assert advanced.needs_scheduler  # finish_backfills marks the backfill done
    harness.tick()
    assert store.get_backfill(1).state == "done"


@pytest.mark.parametrize(  # row locks: on SQLite every writer waits for the one lock
    "database_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_busy_dag_row_is_skipped_not_waited_for(harness, write_dag, settings):
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", extra="max_active_runs=1,"))
    harness.parse()
    runs = _trigger(store, "d", 2, clock.now())
    store.start_queued_runs(clock.now())
    _run_all_tasks(store, clock.now(), leave_runs="d")
    other = Store(settings.database_url)
    try:
        with other.write() as holder:  # e.g. another scheduler's start_runs
            holder.execute(text("SELECT 1 FROM dags WHERE dag_id = 'd' FOR UPDATE"))
            pk = store.get_run(runs[0]).id
            with store.write() as conn:
                lock_runs(conn, [pk], True)
                advanced = store.advance_runs_locked(conn, [pk], clock.now())
        assert advanced.finished == [(runs[0], "success")]
        assert advanced.started.run_ids == [] and advanced.needs_scheduler
    finally:
        other.dispose()
    assert store.start_queued_runs(clock.now()) == [runs[1]]


def test_slots_are_read_before_a_write_transaction_is_taken(harness, write_dag):
    """A DAG whose slots are all taken costs start_runs no write transaction."""
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d", extra="max_active_runs=1,"))
    harness.parse()
    _trigger(store, "d", 3, clock.now())
    assert len(store.start_queued_runs(clock.now())) == 1
    writes = []
    real = store.write

    def counting_write():
        writes.append(1)
        return real()

    store.write = counting_write  # type: ignore[method-assign]
    try:
        assert store.start_queued_runs(clock.now()) == []
    finally:
        store.write = real  # type: ignore[method-assign]
    assert writes == []


def test_runs_finished_rows_are_the_stored_ones(harness, write_dag):
    """finish_ready_runs writes end_date and the state compare-and-set on running."""
    store, clock = harness.store, harness.clock
    write_dag("d.py", dag_source("d"))
    harness.parse()
    [run_id] = _trigger(store, "d", 1, clock.now())
    store.start_queued_runs(clock.now())
    _run_all_tasks(store, clock.now(), leave_runs="d")
    clock.advance(seconds=3)
    assert store.finish_runs(clock.now()) == [(run_id, "success")]
    with store.read() as conn:
        row = conn.execute(select(m.dag_runs).where(m.dag_runs.c.run_id == run_id)).one()
    assert (row.state, row.end_date) == ("success", clock.now())
    assert store.finish_runs(clock.now()) == []


# -- issue 31: a run's state comes from its leaf tasks, for every trigger-rule outcome ----
LEAF_OUTCOMES = [
    # (leaf's trigger rule, up's outcome, the leaf's decided state, its own outcome if it
    #  runs, the run's state)
    ("all_success", "success", "queued", "success", "success"),
    ("all_success", "success", "queued", "failed", "failed"),
    ("all_success", "failed", "upstream_failed", None, "failed"),
    ("all_done", "failed", "queued", "success", "success"),  # up failed but is no leaf
    ("all_done", "failed", "queued", "failed", "failed"),
    ("all_failed", "failed", "queued", "success", "success"),
    ("all_failed", "success", "skipped", None, "success"),  # a skipped leaf is no failure
    ("one_failed", "success", "skipped", None, "success"),
    ("one_failed", "failed", "queued", "success", "success"),
    ("one_success", "failed", "upstream_failed", None, "failed"),
    ("one_done", "failed", "queued", "success", "success"),
    ("none_failed", "failed", "upstream_failed", None, "failed"),
    ("none_skipped", "failed", "queued", "success", "success"),
    ("none_failed_min_one_success", "failed", "upstream_failed", None, "failed"),
    ("all_done_min_one_success", "failed", "upstream_failed", None, "failed"),
    ("all_skipped", "success", "skipped", None, "success"),
    ("always", "failed", "queued", "success", "success"),
]


def _finish(store: Store, outcomes: dict[str, str], now: datetime) -> None:
    """Claim what is queued (exactly the tasks of ``outcomes``) and record each outcome."""
    claims = {c.task_id: c for c in store.claim("w", now, LEASE, limit=10)}
    assert sorted(claims) == sorted(outcomes)
    for task_id, outcome in sorted(outcomes.items()):
        if outcome == "success":
            assert store.finish_success(claims[task_id], None, now)
        else:
            assert store.finish_failure(claims[task_id], "boom", 1, now) == "failed"


@pytest.mark.parametrize(("rule", "up", "decided", "ran", "run_state"), LEAF_OUTCOMES)
def test_a_run_state_is_decided_by_its_leaves(
    harness, write_dag, rule, up, decided, ran, run_state
):
    """Store level: ``up >> leaf``, beside a second leaf ``side`` that succeeds. A
    failed task that is no leaf does not fail the run; a failed or upstream_failed
    leaf does; a skipped leaf does not."""
    store, now = harness.store, harness.clock.now()
    write_dag(
        "leaves.py",
        f"""
        from orchestrator import DAG, task

        with DAG("leaves", schedule=None, default_retries=0) as dag:
            @task
            def up(ctx):
                return 1

            @task(trigger_rule="{rule}")
            def leaf(ctx):
                return 2

            @task
            def side(ctx):
                return 3

            up >> leaf
        """,
    )
    harness.parse()
    run_id = store.trigger_run("leaves", now).run_id
    store.start_queued_runs(now)
    _finish(store, {"side": "success", "up": up}, now)
    assert store.get_run(run_id).state == "running"  # the leaf is still open
    assert store.finish_ready_runs(now).finished == []

    store.release_ready(now)
    assert store.task_instance(run_id, "leaf").state == decided
    if ran is not None:
        assert store.get_run(run_id).state == "running"
        _finish(store, {"leaf": ran}, now)
    store.finish_ready_runs(now)
    assert store.get_run(run_id).state == run_state
    assert [e.kind for e in store.events(kind=f"run_{run_state}")] == [f"run_{run_state}"]
    assert store.finish_ready_runs(now).finished == []  # once
