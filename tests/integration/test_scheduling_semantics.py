"""Issue 3 on both backends: run dedupe by type, bounded catch-up, unpause, overlap,
backfill records (idempotent, rerun, reset, order, max_active_runs, cancel, paused),
manual params and branching."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.engine.scheduler import Scheduler
from orchestrator.errors import ConfigError
from tests.helpers import Harness

START = datetime(2026, 1, 1, tzinfo=UTC)


def hourly_dag(dag_id: str, misfire: str = "backfill", extra: str = "") -> str:
    return f"""
from datetime import datetime, timedelta, timezone
from orchestrator import DAG, task

with DAG("{dag_id}", schedule=timedelta(hours=1), misfire="{misfire}", {extra}
         start_date=datetime(2026, 1, 1, tzinfo=timezone.utc), params={{"n": 1}}) as dag:
    @task
    def only(ctx):
        return ctx.params["n"]
"""


def test_a_manual_run_never_blocks_the_scheduled_run_of_the_same_time(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("h.py", hourly_dag("h"))
    harness.parse()
    manual = store.trigger_run("h", clock.now(), logical_date=START + timedelta(hours=1))
    clock.advance(hours=1)
    harness.tick()
    runs = {(r.run_type, r.logical_date) for r in store.list_runs("h")}
    assert ("manual", START + timedelta(hours=1)) in runs
    assert ("scheduled", START + timedelta(hours=1)) in runs  # not displaced, not blocked
    assert store.get_run(manual.run_id).run_type == "manual"
    # a second scheduled or backfill run for that time is refused by the database
    from orchestrator.store.runs.run_rows import insert_run

    spec = store.current_spec("h")
    with store.write() as conn:
        when = START + timedelta(hours=1)
        kw = dict(logical_date=when, interval=(when, when), conf={}, now=clock.now())
        assert (
            insert_run(conn, spec, store.get_dag("h").version_hash, run_type="backfill", **kw)
            is None
        )


def test_ten_thousand_missed_fires_are_created_in_bounded_batches_while_others_run(
    store, settings, clock, write_dag
):
    write_dag("big.py", hourly_dag("big"))
    write_dag("small.py", hourly_dag("small", misfire="coalesce"))
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        clock.set(START + timedelta(hours=9_999, minutes=30))
        scheduler = Scheduler(store, clock, settings, scheduler_id="s", batch=1_000)
        sizes = []
        for _ in range(12):
            before = store.count_runs("big")
            scheduler.tick(clock.now())
            sizes.append(sum(store.count_runs("big").values()) - sum(before.values()))
            # the other DAG is scheduled on the very first tick, not after the catch-up
            assert len(store.list_runs("small")) == 1
    finally:
        harness.close()
    assert max(sizes) <= 1_000 and sizes[:10] == [1_000] * 10 and sizes[10:] == [0, 0]
    runs = store.list_runs("big", limit=20_000)
    dates = sorted(r.logical_date for r in runs)
    assert len(dates) == 10_000 == len(set(dates))
    assert dates[0] == START and dates[-1] == START + timedelta(hours=9_999)


def test_unpausing_applies_the_misfire_policy(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("c.py", hourly_dag("c", misfire="coalesce"))
    harness.parse()
    harness.tick()
    store.set_paused("c", True, clock.now())
    clock.advance(hours=5, minutes=10)
    harness.tick()
    assert len(store.list_runs("c")) == 1  # paused: nothing created
    store.set_paused("c", False, clock.now())
    harness.tick()
    assert sorted(r.logical_date for r in store.list_runs("c")) == [
        START,
        START + timedelta(hours=5),
    ]
    [event] = store.events(dag_id="c", kind="fire_coalesced")
    assert "coalesced" in event.message


def minutely_dag(dag_id: str, misfire: str) -> str:
    return f"""
from datetime import datetime
from orchestrator import DAG

with DAG("{dag_id}", schedule="* * * * *", misfire="{misfire}",
         start_date=datetime(2026, 1, 1)) as dag:
    dag.shell("t", "true")
"""


def test_new_minutely_dags_at_start_up_get_one_run_each_unless_backfill(harness, write_dag):
    # the scheduler decides at 00:04:30: five fire times are due, all inside the
    # 5-minute misfire_grace; skip used to create a run for every one of them
    store, clock = harness.store, harness.clock
    for n in range(20):
        write_dag(f"skip{n}.py", minutely_dag(f"skip{n}", "skip"))
    write_dag("coalesce.py", minutely_dag("coalesce", "coalesce"))
    write_dag("backfill.py", minutely_dag("backfill", "backfill"))
    harness.parse()
    clock.set(START + timedelta(minutes=4, seconds=30))
    harness.tick()
    latest = START + timedelta(minutes=4)
    for n in range(20):
        assert [r.logical_date for r in store.list_runs(f"skip{n}")] == [latest]
    assert [r.logical_date for r in store.list_runs("coalesce")] == [latest]
    assert sorted(r.logical_date for r in store.list_runs("backfill")) == [
        START + timedelta(minutes=m) for m in range(5)
    ]
    [skipped] = store.events(dag_id="skip0", kind="fire_skipped")
    assert START.isoformat() in skipped.message and latest.isoformat() in skipped.message
    clock.advance(seconds=31)  # 00:05:01: the next fire time is on time and runs
    harness.tick()
    assert len(store.list_runs("skip0")) == 2


@pytest.mark.parametrize(
    ("overlap", "max_active", "running"), [("queue", "", 1), ("allow", "max_active_runs=2,", 2)]
)
def test_queue_runs_one_at_a_time_and_allow_up_to_max_active_runs(
    harness, write_dag, overlap, max_active, running
):
    store, clock = harness.store, harness.clock
    write_dag("o.py", hourly_dag("o", extra=f"overlap={overlap!r}, {max_active}"))
    harness.parse()
    clock.advance(hours=3, minutes=1)
    harness.tick()  # backfill misfire: 4 runs created
    states = sorted(r.state for r in store.list_runs("o"))
    assert states.count("running") == running and states.count("queued") == 4 - running


def test_trigger_checks_params_and_changes_nothing_on_bad_conf(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("p.py", hourly_dag("p", extra="strict_conf=True,"))
    harness.parse()
    with pytest.raises(ConfigError, match="param 'n' must be an integer"):
        store.trigger_run("p", clock.now(), conf={"n": "three"})
    with pytest.raises(ConfigError, match="unknown param 'm' \\(declared params: n\\)"):
        store.trigger_run("p", clock.now(), conf={"m": 1})
    assert store.list_runs("p") == []
    run = store.trigger_run("p", clock.now(), conf={"n": 5})
    assert run.conf == {"n": 5}


def _backfill(store, clock, dag_id, hours, **kw):
    spec = store.current_spec(dag_id)
    times = [START + timedelta(hours=h) for h in hours]
    return store.create_backfill(
        dag_id,
        [(t, spec.schedule.data_interval(t)) for t in times],
        clock.now(),
        start=times[0],
        end=times[-1],
        max_active_runs=kw.pop("max_active_runs", 2),
        **kw,
    )


def test_backfill_is_idempotent_ordered_and_bounded(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("b.py", hourly_dag("b", extra="paused=True,"))
    harness.parse()
    record, counts = _backfill(store, clock, "b", range(6), reverse=True)
    assert counts == {"created": 6, "cleared": 0, "kept": 0}
    harness.tick()
    assert store.list_runs("b", state="running") == []  # a paused DAG's backfill waits
    store.set_paused("b", False, clock.now())
    harness.tick()
    running = sorted(r.logical_date for r in store.list_runs("b", state="running"))
    assert running == [START + timedelta(hours=4), START + timedelta(hours=5)]  # newest first
    _, again = _backfill(store, clock, "b", range(6))
    assert again == {"created": 0, "cleared": 0, "kept": 6}
    for _ in range(10):
        harness.tick()
        harness.worker.run_until_idle()
        clock.advance(seconds=1)
    assert store.get_backfill(record.id).state == "done"
    assert store.get_backfill(record.id).runs == {"success": 6}
    assert len(store.list_runs("b", limit=100)) == 6


def test_backfill_rerun_failed_and_reset_clear_existing_runs(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("r.py", hourly_dag("r"))
    harness.parse()
    _backfill(store, clock, "r", range(3))
    harness.tick()
    run0 = store.list_runs("r", limit=10)[-1]
    store.cancel_run(run0.run_id, clock.now())  # a finished, unsuccessful run
    _, counts = _backfill(store, clock, "r", range(3), rerun_failed=True)
    assert counts["cleared"] == 1 and counts["created"] == 0
    assert store.get_run(run0.run_id).state in ("queued", "running")
    assert {t.state for t in store.task_instances(run0.run_id)} <= {"scheduled", "queued"}
    assert len(store.list_runs("r", limit=10)) == 3  # a rerun is a clear, not a new run


def test_backfill_cancel_cancels_queued_runs_only(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("x.py", hourly_dag("x"))
    harness.parse()
    record, _ = _backfill(store, clock, "x", range(5), max_active_runs=1)
    harness.tick()
    assert store.cancel_backfill(record.id, clock.now()) == 4
    assert store.cancel_backfill(record.id, clock.now()) == 0
    got = store.get_backfill(record.id)
    assert got.state == "cancelled" and got.runs == {"running": 1, "cancelled": 4}


BRANCHY = """
from orchestrator import DAG, task

with DAG("branchy", schedule=None, params={"pick": "left"}) as dag:
    @task.branch
    def choose(ctx):
        return ctx.params["pick"]

    @task
    def left():
        return "l"

    @task
    def right():
        return "r"

    @task
    def after_right():
        return 1

    @task(trigger_rule="none_failed_min_one_success")
    def join():
        return "j"

    choose >> [left, right]
    right >> after_right
    [left, after_right] >> join
"""


@pytest.mark.parametrize(
    ("pick", "want"),
    [
        ("left", {"left": "success", "right": "skipped", "after_right": "skipped"}),
        ("right", {"left": "skipped", "right": "success", "after_right": "success"}),
    ],
)
def test_branch_follows_the_returned_task_and_skips_propagate(harness, write_dag, pick, want):
    store, clock = harness.store, harness.clock
    write_dag("branchy.py", BRANCHY)
    harness.parse()
    run = store.trigger_run("branchy", clock.now(), conf={"pick": pick})
    done = harness.run_until_finished(run.run_id)
    states = {t.task_id: t.state for t in store.task_instances(run.run_id)}
    assert states == {"choose": "success", "join": "success", **want}
    assert done.state == "success"
    [event] = store.events(kind="branch_followed")
    assert event.message.startswith(f"followed {pick}")


def test_a_branch_naming_a_task_that_is_not_directly_downstream_fails(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag("branchy.py", BRANCHY)
    harness.parse()
    run = store.trigger_run("branchy", clock.now(), conf={"pick": "join"})
    harness.run_until_finished(run.run_id)
    choose = store.task_instance(run.run_id, "choose")
    assert choose.state == "failed"
    assert "returned 'join', not a direct downstream task (one of: left, right)" in choose.error


def test_migration_0002_keeps_existing_runs_task_instances_and_tries(sqlite_url):
    """SQLite must recreate dag_runs; the cascade must not take the children with it."""
    from sqlalchemy import text

    from orchestrator.store.core.db import make_engine, upgrade

    path = sqlite_url.removeprefix("sqlite:///")
    import os

    os.remove(path)
    upgrade(sqlite_url, "0001")
    engine = make_engine(sqlite_url)
    ts = "2026-01-01 00:00:00.000000"
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO dag_runs (id, run_id, dag_id, version_hash, run_type, logical_date, "
                "data_interval_start, data_interval_end, state, conf, created_at) VALUES "
                f"(1, 'r1', 'd', 'h', 'scheduled', '{ts}', '{ts}', '{ts}', 'success', '{{}}', '{ts}')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO task_instances (id, run_pk, dag_id, run_id, task_id, state, "
                "try_number, max_tries, queue) VALUES (1, 1, 'd', 'r1', 't', 'success', 1, 1, 'q')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO task_tries (ti_id, dag_id, run_id, task_id, try_number, worker, "
                f"state, start_date) VALUES (1, 'd', 'r1', 't', 1, 'w', 'success', '{ts}')"
            )
        )
    engine.dispose()
    upgrade(sqlite_url)
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        counts = [
            conn.execute(text(f"SELECT count(*) FROM {t}")).scalar()
            for t in ("dag_runs", "task_instances", "task_tries")
        ]
        fk = conn.execute(text("PRAGMA foreign_key_check")).all()
    engine.dispose()
    assert counts == [1, 1, 1] and fk == []
