"""Issue 29: run creation works on the DAGs that are due, in bounded batches, shared by
schedulers; a tick's phases are bounded, so a backlog in one never stalls the others."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import event, select, text

from orchestrator.engine.scheduler import Scheduler
from orchestrator.store import Store
from orchestrator.store.core import models as m

MINUTELY = """
from datetime import UTC, datetime

from orchestrator import DAG, task


def noop():
    return None


for n in range({count}):
    with DAG(f"m{{n:04d}}", schedule="* * * * *", start_date=datetime(2026, 1, 1, tzinfo=UTC),
             misfire="skip", max_active_runs=1):
        task(task_id="t")(noop)
"""


def _statements(store: Store) -> list[str]:
    seen: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    return seen


def _scheduled_runs(store: Store) -> Counter:
    r = m.dag_runs
    with store.read() as conn:
        rows = conn.execute(
            select(r.c.dag_id, r.c.logical_date).where(r.c.run_type == "scheduled")
        ).all()
    return Counter((row.dag_id, row.logical_date) for row in rows)


def test_an_idle_tick_reads_dags_only_through_the_due_index(
    harness, write_dag, store, settings, clock
):
    """Nothing due: the tick never reads the DAG table whole (the old one read every DAG
    row on every tick): each DAG read is the indexed due read, or driven by runs or
    asset events; and it takes no write lock."""
    write_dag("minutely.py", MINUTELY.format(count=50))
    harness.parse()
    clock.advance(seconds=30)
    while harness.tick().busy:  # every DAG's first run, created and started
        pass
    clock.advance(seconds=1)  # 00:00:31: the next fire time (00:01) is not due yet
    harness.tick()  # settles the lease renewal
    seen = _statements(store)
    result = harness.tick()
    assert not result.busy and result.runs_created == 0
    dag_reads = [s for s in seen if "FROM dags" in s or "JOIN dags" in s]
    assert dag_reads and all(
        "next_dagrun_create_after <=" in s or "FROM dag_runs" in s or "asset_queue" in s
        for s in dag_reads
    ), dag_reads
    assert "BEGIN IMMEDIATE" not in seen and not any("FOR UPDATE" in s for s in seen)


def test_due_dags_beyond_a_tick_carry_to_the_next_and_each_fire_time_runs_once(
    harness, write_dag, store, settings, clock
):
    write_dag("minutely.py", MINUTELY.format(count=250))
    harness.parse()
    scheduler = Scheduler(
        store, clock, settings, scheduler_id="bounded", create_batch=40, create_per_tick=100
    )
    clock.advance(minutes=1, seconds=1)
    made = [scheduler.tick(clock.now()) for _ in range(4)]
    assert [t.runs_created for t in made] == [100, 100, 50, 0]
    assert [t.more for t in made] == [True, True, False, False]
    runs = _scheduled_runs(store)
    assert len(runs) == 250 and set(runs.values()) == {1}
    # every run started at creation (no other run of its DAG) and its task is queued
    with store.read() as conn:
        states = Counter(conn.execute(select(m.task_instances.c.state)).scalars())
    assert states == {"queued": 250}


def test_a_backlog_of_5000_due_runs_does_not_hold_up_a_ready_task(
    harness, write_dag, store, settings, clock
):
    """A catch-up of 5,000 fire times is created 500 a tick; a task that becomes ready
    meanwhile is released by the very next tick, not after the backlog."""
    write_dag(
        "catchup.py",
        """
        from datetime import UTC, datetime, timedelta
        from orchestrator import DAG, task

        with DAG("catchup", schedule=timedelta(minutes=1), misfire="backfill",
                 start_date=datetime(2026, 1, 1, tzinfo=UTC), max_active_runs=1):
            task(task_id="t")(lambda: None)

        with DAG("ready", schedule=None):
            a = task(task_id="a")(lambda: None)
            b = task(task_id="b")(lambda: None)
            a >> b
        """,
    )
    harness.parse()
    run = store.trigger_run("ready", clock.now())
    clock.advance(minutes=4999, seconds=30)  # 5,000 fire times due
    first = harness.tick()
    assert first.runs_created == 500 and first.busy
    store.mark_task(run.run_id, "a", "success", clock.now())  # a is done: b may run
    second = harness.tick()
    assert second.released >= 1
    tis = {t.task_id: t.state for t in store.task_instances(run.run_id)}
    assert tis["b"] == "queued"
    assert len(_scheduled_runs(store)) == 1000  # the backlog is still being created
    ticks = 2
    while harness.tick().busy:
        ticks += 1
    runs = _scheduled_runs(store)
    assert len(runs) == 5000 and set(runs.values()) == {1}
    assert ticks <= 12  # 500 a tick


def test_a_manual_only_dag_is_never_due(harness, write_dag, store, clock):
    write_dag(
        "manual.py",
        """
        from orchestrator import DAG, task

        with DAG("manual", schedule=None):
            task(task_id="t")(lambda: None)
        """,
    )
    harness.parse()
    d = m.dags
    with store.read() as conn:
        after = conn.execute(select(d.c.next_dagrun_create_after)).scalar()
    assert after is None  # nothing for the scheduler to create, ever
    assert harness.tick().runs_created == 0


def test_a_changed_schedule_is_due_at_once(harness, write_dag, store, clock):
    write_dag(
        "hourly.py",
        """
        from datetime import UTC, datetime
        from orchestrator import DAG, task

        with DAG("flip", schedule=None, start_date=datetime(2025, 1, 1, tzinfo=UTC)):
            task(task_id="t")(lambda: None)
        """,
    )
    harness.parse()
    write_dag(
        "hourly.py",
        """
        from datetime import UTC, datetime
        from orchestrator import DAG, task

        with DAG("flip", schedule="@hourly", start_date=datetime(2025, 1, 1, tzinfo=UTC),
                 misfire="coalesce"):
            task(task_id="t")(lambda: None)
        """,
    )
    clock.advance(seconds=5)
    harness.parse()
    harness.tick()  # a changed schedule starts after now: the cursor moves, no run
    dag = store.get_dag("flip")
    assert dag.next_logical_date is not None and dag.next_logical_date > clock.now()
    clock.advance(hours=1)
    assert harness.tick().runs_created == 1


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_schedulers_without_the_lease_create_runs_and_skip_locked_dags(
    harness, write_dag, store, settings, clock
):
    """On PostgreSQL creation is shared: a scheduler that does not lead creates the due
    DAGs' runs, skipping (not waiting for) the DAG rows another scheduler holds."""
    write_dag("minutely.py", MINUTELY.format(count=60))
    harness.parse()
    harness.tick()  # the harness scheduler leads
    clock.advance(minutes=1, seconds=1)
    lease = timedelta(seconds=settings.lease_seconds)
    assert store.acquire_leadership("test-scheduler", clock.now(), lease)  # and still does
    standby = Scheduler(Store(settings.database_url), clock, settings, scheduler_id="standby")
    held = Store(settings.database_url)
    try:
        with held.engine.connect() as conn, conn.begin():
            conn.execute(  # another scheduler's batch holds 20 DAG rows
                text("SELECT dag_id FROM dags WHERE dag_id < 'm0020' FOR UPDATE")
            ).all()
            result = standby.tick(clock.now())
            assert not result.leader and result.runs_created == 40
        result = standby.tick(clock.now())  # the rows are free again
        assert not result.leader and result.runs_created == 20
        runs = _scheduled_runs(store)  # 00:00's, the harness's, and 00:01's, the standby's
        assert len(runs) == 120 and set(runs.values()) == {1}
        assert harness.tick().runs_created == 0  # nothing left for the leader
    finally:
        held.dispose()
        standby.store.dispose()


def test_two_schedulers_creating_at_once_make_each_run_once(
    harness, write_dag, store, settings, clock
):
    write_dag("minutely.py", MINUTELY.format(count=300))
    harness.parse()
    stores = [Store(settings.database_url) for _ in range(2)]
    schedulers = [
        Scheduler(s, clock, settings, scheduler_id=f"s{i}", create_batch=25)
        for i, s in enumerate(stores)
    ]
    errors: list[BaseException] = []
    made = [0, 0]

    def create(i: int, barrier: threading.Barrier) -> None:
        try:
            barrier.wait()
            made[i] += schedulers[i].schedule_dags(clock.now())
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    try:
        for _ in range(3):  # three minutes, both schedulers racing for each
            clock.advance(minutes=1)
            barrier = threading.Barrier(2)
            threads = [threading.Thread(target=create, args=(i, barrier)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        for s in stores:
            s.dispose()
    assert errors == []
    runs = _scheduled_runs(store)
    assert sum(made) == len(runs) == 900 and set(runs.values()) == {1}


def test_an_idle_scheduler_wakes_when_the_next_dag_falls_due(
    harness, write_dag, store, settings, clock
):
    """Not up to ``scheduler_interval`` after the fire: at the fire (issue 29)."""
    write_dag("minutely.py", MINUTELY.format(count=3))
    harness.parse()
    clock.advance(seconds=59.7)
    result = harness.tick()  # the 00:00 runs; the next fire is at 00:01, 0.3 s away
    assert not harness.tick().busy
    assert harness.scheduler._pause(result) == pytest.approx(0.3)
    assert settings.scheduler_interval == 1.0
    clock.advance(seconds=5)  # a DAG overdue (another scheduler holds it): a short floor
    assert harness.scheduler._pause(result) == 0.01
    store.set_paused("m0000", True, clock.now())
    store.set_paused("m0001", True, clock.now())
    store.set_paused("m0002", True, clock.now())
    assert harness.scheduler._pause(result) == 1.0  # nothing of ours falls due
