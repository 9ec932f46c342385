"""Sensors (issue 15 item 3), on both backends, the fake clock driving the pokes.

A sensor in reschedule mode pokes, finds its condition unmet and waits in the store
(``up_for_reschedule``, no owner, no lease, ``ready_at`` at its next poke) under one
try number whose log gets a line per poke; pokes spend no retries, an exception does;
the timeout counts from the first poke and fails it (``soft_fail``: skips it).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

from orchestrator.engine.worker import Worker
from orchestrator.errors import DagDefinitionError

SENSOR_DAG = """
import json, os
from datetime import timedelta
from orchestrator import DAG, task

FLAG = {flag!r}

with DAG("waits", schedule=None) as dag:
    @task.sensor(poke_interval=timedelta(seconds=30), timeout=timedelta(seconds={timeout}),
                 retries={retries}, {extra})
    def wait_flag(ctx):
        if os.path.exists(FLAG + ".boom"):
            raise RuntimeError("the poke broke")
        if os.path.exists(FLAG):
            return json.load(open(FLAG))
        return False

    @task
    def after(ctx):
        return {{"got": ctx.upstream("wait_flag")}}

    wait_flag >> after
"""


def _dag(write_dag, tmp_path: Path, *, timeout=600, retries=0, extra="") -> Path:
    flag = tmp_path / "flag.json"
    write_dag("waits.py", SENSOR_DAG.format(flag=str(flag), timeout=timeout, retries=retries,
                                            extra=extra))  # fmt: skip
    return flag


def _start(harness) -> str:
    harness.parse()
    run = harness.store.trigger_run("waits", harness.clock.now())
    harness.tick()
    return run.run_id


def _poke(harness, advance: float = 0) -> None:
    harness.clock.advance(timedelta(seconds=advance))
    harness.tick()
    harness.worker.run_until_idle()
    harness.tick()


def _log(harness, run_id: str, task_id: str, try_number: int = 1) -> str:
    [t] = [t for t in harness.store.tries(run_id, task_id) if t.try_number == try_number]
    return Path(harness.settings.log_dir, t.log_path).read_text()


def test_unmet_pokes_wait_in_the_store_under_one_try_then_the_value_goes_downstream(
    harness, write_dag, tmp_path
):
    store, clock = harness.store, harness.clock
    flag = _dag(write_dag, tmp_path)
    run_id = _start(harness)
    first = clock.now()
    _poke(harness)
    ti = store.task_instance(run_id, "wait_flag")
    assert (ti.state, ti.try_number, ti.poke_count) == ("up_for_reschedule", 1, 1)
    assert ti.owner is None and ti.lease_expires_at is None  # holds no worker slot
    assert ti.ready_at == first + timedelta(seconds=30)
    assert ti.first_poke_at == first
    _poke(harness, 10)  # not due yet: nobody pokes
    assert store.task_instance(run_id, "wait_flag").poke_count == 1
    _poke(harness, 20)
    ti = store.task_instance(run_id, "wait_flag")
    assert (ti.state, ti.try_number, ti.poke_count) == ("up_for_reschedule", 1, 2)
    assert ti.first_poke_at == first  # the timeout still counts from the first poke
    [only] = store.tries(run_id, "wait_flag")
    assert (only.try_number, only.state) == (1, "up_for_reschedule")
    flag.write_text(json.dumps({"rows": 7}))
    _poke(harness, 30)
    assert store.task_instance(run_id, "wait_flag").state == "success"
    done = harness.run_until_finished(run_id)
    assert done.state == "success"
    assert json.loads(store.results(run_id, ["after"])["after"]) == {"got": {"rows": 7}}
    [only] = store.tries(run_id, "wait_flag")
    assert (only.try_number, only.state) == (1, "success")
    log = _log(harness, run_id, "wait_flag")
    assert "poke 1: condition not met" in log and "poke 2: condition not met" in log
    assert "poke 3: condition met" in log
    # issue 27: one "starting" line for the try, then one line per poke
    assert log.count("starting dag_id=") == 1
    assert [line.split(" INFO ")[-1][:6] for line in log.splitlines() if "poke " in line] == [
        "poke 1", "poke 2", "poke 3"
    ]  # fmt: skip


def test_the_timeout_counts_from_the_first_poke_and_fails_without_spending_retries(
    harness, write_dag, tmp_path
):
    store = harness.store
    _dag(write_dag, tmp_path, timeout=60, retries=3)
    run_id = _start(harness)
    _poke(harness)
    _poke(harness, 30)
    ti = store.task_instance(run_id, "wait_flag")
    assert ti.state == "up_for_reschedule" and ti.try_number == 1
    _poke(harness, 30)  # the poke at the deadline itself is the last one
    ti = store.task_instance(run_id, "wait_flag")
    assert ti.state == "failed" and ti.try_number == 1
    assert "sensor timed out" in ti.error and "3 pokes" in ti.error
    assert harness.run_until_finished(run_id).state == "failed"
    assert store.task_instance(run_id, "after").state == "upstream_failed"
    assert [e.kind for e in store.events(run_id=run_id, kind="sensor_failed")] == ["sensor_failed"]


def test_soft_fail_skips_the_sensor_and_its_downstream(harness, write_dag, tmp_path):
    store = harness.store
    _dag(write_dag, tmp_path, timeout=30, extra="soft_fail=True")
    run_id = _start(harness)
    _poke(harness)
    _poke(harness, 30)
    assert store.task_instance(run_id, "wait_flag").state == "skipped"
    assert harness.run_until_finished(run_id).state == "success"
    assert store.task_instance(run_id, "after").state == "skipped"


def test_a_poke_that_raises_spends_a_retry_and_starts_a_new_try(harness, write_dag, tmp_path):
    store = harness.store
    flag = _dag(write_dag, tmp_path, retries=1, extra="retry_delay=5")
    run_id = _start(harness)
    _poke(harness)
    assert store.task_instance(run_id, "wait_flag").state == "up_for_reschedule"
    Path(str(flag) + ".boom").write_text("x")
    _poke(harness, 30)
    ti = store.task_instance(run_id, "wait_flag")
    assert (ti.state, ti.try_number) == ("up_for_retry", 1)
    assert "the poke broke" in ti.error
    os.unlink(str(flag) + ".boom")
    _poke(harness, (ti.ready_at - harness.clock.now()).total_seconds())
    ti = store.task_instance(run_id, "wait_flag")
    # a new try: its own poke count and its own timeout start
    assert (ti.state, ti.try_number, ti.poke_count) == ("up_for_reschedule", 2, 1)
    assert [t.state for t in store.tries(run_id, "wait_flag")] == ["failed", "up_for_reschedule"]


def test_a_sensor_whose_worker_died_between_pokes_is_poked_by_another_worker(
    harness, write_dag, tmp_path
):
    store, clock = harness.store, harness.clock
    flag = _dag(write_dag, tmp_path)
    run_id = _start(harness)
    _poke(harness)
    harness.worker.close()  # the worker is gone; the sensor is in the store, not in it
    other = Worker(store, clock, harness.settings, worker_id="worker-B")
    try:
        flag.write_text("1")
        clock.advance(timedelta(seconds=30))
        harness.tick()
        other.run_until_idle()
        ti = store.task_instance(run_id, "wait_flag")
        assert (ti.state, ti.try_number) == ("success", 1)
        [only] = store.tries(run_id, "wait_flag")
        assert only.worker == "worker-B"
    finally:
        other.close()


def test_exponential_backoff_doubles_the_wait_up_to_max_wait(harness, write_dag, tmp_path):
    store, clock = harness.store, harness.clock
    _dag(write_dag, tmp_path, extra="exponential_backoff=True, max_wait=100")
    run_id = _start(harness)
    waits = []
    for _ in range(4):
        before = clock.now()
        _poke(harness)
        ti = store.task_instance(run_id, "wait_flag")
        waits.append((ti.ready_at - before).total_seconds())
        clock.advance(ti.ready_at - clock.now())
    assert waits == [30, 60, 100, 100]


def test_poke_mode_loops_inside_one_try(harness, write_dag, tmp_path):
    counter = tmp_path / "count"
    write_dag(
        "poker.py",
        f"""
        from orchestrator import DAG, task

        with DAG("poker", schedule=None) as dag:
            @task.sensor(poke_interval=0.05, timeout=30, mode="poke")
            def third_time(ctx):
                path = {str(counter)!r}
                n = int(open(path).read()) + 1 if __import__("os").path.exists(path) else 1
                open(path, "w").write(str(n))
                return n if n >= 3 else None
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("poker", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "success"
    assert harness.store.results(run.run_id, ["third_time"])["third_time"] == "3"
    [only] = harness.store.tries(run.run_id, "third_time")
    log = _log(harness, run.run_id, "third_time")
    assert "poke 2: condition not met; poking again" in log and "poke 3: condition met" in log
    assert only.state == "success"


def test_poke_mode_timeout_fails_the_sensor_without_retrying(harness, write_dag):
    write_dag(
        "poker.py",
        """
        from orchestrator import DAG, task

        with DAG("poker", schedule=None) as dag:
            @task.sensor(poke_interval=0.05, timeout=0.2, mode="poke", retries=2)
            def never(ctx):
                return []
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("poker", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "failed"
    ti = harness.store.task_instance(run.run_id, "never")
    assert ti.try_number == 1 and "sensor timed out" in ti.error


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("timeout=60", "a sensor needs poke_interval"),
        ("poke_interval=60, timeout=30", "is shorter than poke_interval"),
        ("poke_interval=60, mode='sometimes'", "mode must be one of"),
        ("poke_interval=60, soft_fail='yes'", "soft_fail must be True or False"),
    ],
)
def test_bad_sensor_options_are_import_errors_naming_file_and_line(
    harness, write_dag, options, message
):
    write_dag(
        "bad.py",
        f"""
        from orchestrator import DAG, task

        with DAG("bad", schedule=None) as dag:
            @task.sensor({options})
            def s(ctx):
                return True
        """,
    )
    harness.parse()
    [error] = harness.store.import_errors()
    assert message in error.message
    assert "bad.py:5" in error.message


def test_task_sensor_takes_every_task_option_in_a_loop(tmp_path):
    from orchestrator import DAG, task

    with DAG("loop", schedule=None) as dag:
        for i in range(3):
            task.sensor(task_id=f"s{i}", poke_interval=5, retries=2, execution_timeout=3)(bool)
    assert sorted(dag.tasks) == ["s0", "s1", "s2"]
    t = dag.tasks["s1"]
    assert t.retries == 2 and t.timeout == timedelta(seconds=3)
    assert t.sensor == {"poke_interval": 5.0, "timeout": 604800.0, "mode": "reschedule"}
    with pytest.raises(DagDefinitionError, match="poke_interval"), DAG("loop2", schedule=None):
        task.sensor(task_id="x")(bool)


def test_a_round_of_pokes_is_fenced_poke_by_poke(harness, write_dag, tmp_path):
    """Pokes recorded in one transaction: a stale one (its lease lost and the sensor
    reclaimed by another worker) changes nothing and is logged; the others count."""
    write_dag(
        "many.py",
        """
        from orchestrator import DAG, task

        with DAG("many", schedule=None) as dag:
            for i in range(3):
                task.sensor(task_id=f"s{i}", poke_interval=30)(lambda ctx: None)
        """,
    )
    store, clock = harness.store, harness.clock
    harness.parse()
    run = store.trigger_run("many", clock.now())
    harness.tick()
    claims = store.claim("worker-A", clock.now(), timedelta(seconds=30), limit=3)
    assert len(claims) == 3
    clock.advance(timedelta(seconds=31))
    harness.tick()  # worker-A's leases expired: reaped, queued again (a lost try)
    [retaken] = store.claim("worker-B", clock.now(), timedelta(seconds=30), limit=1)
    states = store.record_pokes([(c, clock.now(), None) for c in claims])
    assert states == [None, None, None]  # all three of worker-A's are stale now
    assert len(store.events(kind="stale_write_rejected")) == 3
    assert store.record_pokes([(retaken, clock.now(), None)]) == ["up_for_reschedule"]
    by_task = {t.task_id: t for t in store.task_instances(run.run_id)}
    assert by_task[retaken.task_id].state == "up_for_reschedule"
    assert by_task[retaken.task_id].try_number == 2
    assert sorted(t.state for t in by_task.values()) == ["queued", "queued", "up_for_reschedule"]


def test_cancelling_or_marking_a_waiting_sensor_closes_its_try(harness, write_dag, tmp_path):
    store, clock = harness.store, harness.clock
    _dag(write_dag, tmp_path)
    run_id = _start(harness)
    _poke(harness)
    store.mark_task(run_id, "wait_flag", "success", clock.now())
    [t] = store.tries(run_id, "wait_flag")
    assert t.state == "marked_success"
    second = store.trigger_run("waits", clock.now() + timedelta(seconds=1))
    clock.advance(timedelta(seconds=1))
    harness.tick()
    harness.worker.run_until_idle()
    assert store.task_instance(second.run_id, "wait_flag").state == "up_for_reschedule"
    store.cancel_run(second.run_id, clock.now())
    assert store.task_instance(second.run_id, "wait_flag").state == "cancelled"
    assert [t.state for t in store.tries(second.run_id, "wait_flag")] == ["cancelled"]


def test_migration_0015_keeps_task_instances_and_their_tries(sqlite_url):
    """0015 adds columns in place: recreating task_instances on SQLite would
    cascade-delete every try."""
    from sqlalchemy import text

    from orchestrator.store.core.db import make_engine, upgrade

    os.remove(sqlite_url.removeprefix("sqlite:///"))
    upgrade(sqlite_url, "0014")
    engine = make_engine(sqlite_url)
    ts = "2026-01-01 00:00:00.000000"
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO dag_runs (id, run_id, dag_id, version_hash, run_type, logical_date, "
            "data_interval_start, data_interval_end, state, conf, created_at) VALUES "
            f"(1, 'r1', 'd', 'h', 'scheduled', '{ts}', '{ts}', '{ts}', 'success', '{{}}', '{ts}')"
        ))  # fmt: skip
        conn.execute(text(
            "INSERT INTO task_instances (id, run_pk, dag_id, run_id, task_id, state, "
            "try_number, max_tries, queue) VALUES (1, 1, 'd', 'r1', 't', 'success', 1, 1, 'q')"
        ))  # fmt: skip
        conn.execute(text(
            "INSERT INTO task_tries (ti_id, dag_id, run_id, task_id, try_number, worker, "
            f"state, start_date) VALUES (1, 'd', 'r1', 't', 1, 'w', 'success', '{ts}')"
        ))  # fmt: skip
    engine.dispose()
    upgrade(sqlite_url)
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        counts = [conn.execute(text(f"SELECT count(*) FROM {t}")).scalar()
                  for t in ("task_instances", "task_tries")]  # fmt: skip
        row = conn.execute(text("SELECT poke_count, worker_check FROM task_instances")).one()
    engine.dispose()
    assert counts == [1, 1] and tuple(row) == (0, 0)
