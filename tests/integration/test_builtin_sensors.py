"""Built-in sensors and triggering another DAG (issue 15 items 4 and 5), on both
backends, the fake clock driving the pokes. The worker evaluates their checks itself:
no task process, no database address in a task."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from orchestrator.engine.worker import Worker
from orchestrator.errors import DagDefinitionError
from tests.conftest import START


def _poke(harness, advance: float = 0) -> None:
    harness.clock.advance(timedelta(seconds=advance))
    harness.tick()
    harness.worker.run_until_idle()
    harness.tick()


def _state(harness, run_id: str, task_id: str) -> str:
    return harness.store.task_instance(run_id, task_id).state


def test_file_sensor_waits_for_a_big_enough_old_enough_file(harness, write_dag, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_dag(
        "files.py",
        f"""
        from orchestrator import DAG
        from orchestrator.sensors import file_sensor

        with DAG("files", schedule=None) as dag:
            file_sensor("landed", "{data}/{{{{ ds }}}}/*.csv", min_size=3, min_age=60,
                        poke_interval=30, timeout=3600)
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("files", harness.clock.now())
    _poke(harness)
    assert _state(harness, run.run_id, "landed") == "up_for_reschedule"
    day = data / START.strftime("%Y-%m-%d")
    day.mkdir()
    small = day / "a.csv"
    small.write_text("x")  # too small
    big = day / "b.csv"
    big.write_text("1,2,3\n")
    now = harness.clock.now() + timedelta(seconds=30)
    os.utime(big, (now.timestamp() - 10, now.timestamp() - 10))  # too young
    _poke(harness, 30)
    ti = harness.store.task_instance(run.run_id, "landed")
    assert ti.state == "up_for_reschedule" and ti.poke_count == 2
    os.utime(big, (now.timestamp() - 61, now.timestamp() - 61))
    _poke(harness, 30)
    assert _state(harness, run.run_id, "landed") == "success"
    assert json.loads(harness.store.results(run.run_id, ["landed"])["landed"]) == [str(big)]
    [t] = harness.store.tries(run.run_id, "landed")
    log = Path(harness.settings.log_dir, t.log_path).read_text()
    assert "poke 1: condition not met: no file matches" in log
    assert "(1 smaller than 3 bytes, 1 younger than 60.0s)" in log
    assert "poke 3: condition met: 1 file(s)" in log


def test_time_sensor_pokes_at_the_target_time_in_the_dags_timezone(harness, write_dag):
    write_dag(
        "clock.py",
        """
        from datetime import timedelta
        from orchestrator import DAG
        from orchestrator.sensors import time_sensor

        with DAG("clock", schedule=None, timezone="Europe/Berlin") as dag:
            time_sensor("nine", target_time="09:00", poke_interval=timedelta(hours=1),
                        timeout=timedelta(hours=12))
            time_sensor("later", delta=timedelta(minutes=5), poke_interval=600)
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("clock", harness.clock.now())  # 2026-01-01 00:00 UTC
    _poke(harness)
    nine = harness.store.task_instance(run.run_id, "nine")
    assert nine.state == "up_for_reschedule"
    assert nine.ready_at == START + timedelta(hours=1)  # poke_interval first, then ...
    later = harness.store.task_instance(run.run_id, "later")
    assert later.ready_at == START + timedelta(minutes=5)  # ... the target, not 10 min
    _poke(harness, 300)
    assert _state(harness, run.run_id, "later") == "success"
    for _ in range(7):
        _poke(harness, 3600)
    nine = harness.store.task_instance(run.run_id, "nine")
    assert nine.ready_at == START + timedelta(hours=8)  # 09:00 in Berlin is 08:00 UTC
    _poke(harness, 3600)
    assert _state(harness, run.run_id, "nine") == "success"


UPSTREAM = """
from orchestrator import DAG, task

with DAG("producer", schedule="@daily", start_date=__import__("datetime").datetime(2026, 1, 1)) as dag:
    @task(retries=0, queue="prod")
    def load(ctx):
        if {fail}:
            raise RuntimeError("no")
"""

WAITER = """
from datetime import timedelta
from orchestrator import DAG
from orchestrator.sensors import external_sensor

with DAG("consumer", schedule="@daily", start_date=__import__("datetime").datetime(2026, 1, 1)) as dag:
    external_sensor("loaded", "producer", "load", poke_interval=60, timeout=3600 {opts})
    external_sensor("whole", "producer", poke_interval=60, timeout=3600)
"""


@pytest.mark.parametrize("fail", [False, True])
def test_external_sensor_waits_for_the_other_dags_task_and_fails_fast(harness, write_dag, fail):
    write_dag("producer.py", UPSTREAM.format(fail=fail))
    write_dag("consumer.py", WAITER.format(opts=""))
    harness.parse()
    harness.clock.advance(timedelta(days=1, seconds=1))
    harness.tick()  # both DAGs' runs for 2026-01-01
    [mine] = harness.store.list_runs("consumer")
    [theirs] = harness.store.list_runs("producer")
    _poke(harness)  # the producer's task is on queue "prod": nobody runs it yet
    assert _state(harness, mine.run_id, "loaded") == "up_for_reschedule"
    assert _state(harness, mine.run_id, "whole") == "up_for_reschedule"
    prod = Worker(harness.store, harness.clock, harness.settings, queues=("prod",))
    try:
        prod.run_until_idle()
    finally:
        prod.close()
    harness.tick()
    _poke(harness, 60)
    ti = harness.store.task_instance(mine.run_id, "loaded")
    if fail:
        assert ti.state == "failed" and ti.try_number == 1
        assert "producer.load is failed" in ti.error
        assert _state(harness, mine.run_id, "whole") == "failed"
    else:
        assert ti.state == "success"
        result = json.loads(harness.store.results(mine.run_id, ["loaded"])["loaded"])
        assert result == {"dag_id": "producer", "run_id": theirs.run_id, "task_id": "load",
                          "state": "success"}  # fmt: skip
        assert _state(harness, mine.run_id, "whole") == "success"


def test_external_sensor_with_an_offset_looks_at_an_earlier_run(harness, write_dag):
    write_dag("producer.py", UPSTREAM.format(fail=False))
    write_dag("consumer.py", WAITER.format(opts=", execution_delta=timedelta(days=1)"))
    harness.parse()
    harness.clock.advance(timedelta(days=1, seconds=1))
    harness.tick()
    [mine] = harness.store.list_runs("consumer")
    _poke(harness)
    # no producer run on 2025-12-31: it waits, and times out in the end
    ti = harness.store.task_instance(mine.run_id, "loaded")
    assert ti.state == "up_for_reschedule"
    for _ in range(60):
        _poke(harness, 60)
    ti = harness.store.task_instance(mine.run_id, "loaded")
    assert ti.state == "failed" and "sensor timed out" in ti.error


TRIGGER = """
from orchestrator import DAG, task
from orchestrator.sensors import trigger_dag

with DAG("target", schedule=None, params={{"day": "none"}}) as target:
    @task
    def work(ctx):
        return ctx.params["day"]

with DAG("kicker", schedule=None) as dag:
    kick = trigger_dag("kick", "target", conf={{"day": "monday"}},
                       wait_for_completion={wait}, poke_interval=30, retries=2)

    @task
    def after(ctx):
        if {flaky} and ctx.try_number == 1:
            raise RuntimeError("flaky")
        return ctx.upstream("kick")

    kick >> after
"""


def test_trigger_dag_creates_one_run_with_conf_and_waits_without_a_slot(harness, write_dag):
    write_dag("trigger.py", TRIGGER.format(wait=True, flaky=False))
    harness.parse()
    run = harness.store.trigger_run("kicker", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()  # the trigger's first poke creates the run ...
    ti = harness.store.task_instance(run.run_id, "kick")
    assert ti.state == "up_for_reschedule" and ti.owner is None  # ... and waits for it
    [made] = harness.store.list_runs("target")
    assert made.run_type == "triggered" and made.conf == {"day": "monday"}
    assert made.logical_date == run.logical_date
    assert made.triggered_by == f"task:kicker/{run.run_id}/kick"
    harness.run_until_finished(made.run_id, step=timedelta(seconds=0))
    done = harness.run_until_finished(run.run_id, step=timedelta(seconds=30))
    assert done.state == "success"
    assert json.loads(harness.store.results(made.run_id, ["work"])["work"]) == "monday"
    assert len(harness.store.list_runs("target")) == 1  # every poke found the same run


def test_a_retried_trigger_never_makes_a_second_run(harness, write_dag):
    write_dag("trigger.py", TRIGGER.format(wait=False, flaky=False))
    harness.parse()
    run = harness.store.trigger_run("kicker", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    [made] = harness.store.list_runs("target")
    assert _state(harness, run.run_id, "kick") == "success"
    # the trigger runs again (cleared, a new try): it finds its run, makes no other
    harness.store.clear_task(run.run_id, "kick", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    ti = harness.store.task_instance(run.run_id, "kick")
    assert (ti.state, ti.try_number) == ("success", 2)
    assert [r.run_id for r in harness.store.list_runs("target")] == [made.run_id]
    log = Path(harness.settings.log_dir, harness.store.tries(run.run_id, "kick")[1].log_path)
    assert f"found run {made.run_id}" in log.read_text()


def test_trigger_dag_with_bad_conf_fails_its_try_with_the_reason(harness, write_dag):
    write_dag("trigger.py", TRIGGER.format(wait=False, flaky=False).replace(
        '{"day": "monday"}', '{"nope": 1}').replace(
        'params={"day": "none"}', 'params={"day": "none"}, strict_conf=True'))  # fmt: skip
    harness.parse()
    run = harness.store.trigger_run("kicker", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    ti = harness.store.task_instance(run.run_id, "kick")
    assert ti.state == "up_for_retry" and "unknown param 'nope'" in ti.error
    assert harness.store.list_runs("target") == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("file_sensor('f', '')", "filepath must be a non-empty string"),
        ("file_sensor('f', '/x/{{ ds ', poke_interval=5)", "sensor 'f'"),
        ("file_sensor('f', '/x', mode='poke')", "mode='reschedule' only"),
        ("time_sensor('t')", "exactly one of target_time and delta"),
        ("time_sensor('t', target_time='25:99')", "target_time must be"),
        ("external_sensor('e', 'other', allowed_states=['done'])", "unknown state(s) 'done'"),
        ("external_sensor('e', 'other', failed_states=['success'])", "in both allowed_states"),
        ("external_sensor('e', 'bad id')", "invalid external_dag_id"),
        ("trigger_dag('t', 'x', conf=[1])", "conf must be a dict"),
        ("file_sensor('f', '/x', poke_interval=60, timeout=10)", "shorter than poke_interval"),
    ],
)
def test_bad_built_in_sensors_name_the_file_and_line(call, message):
    from orchestrator import DAG
    from orchestrator.sensors import external_sensor, file_sensor, time_sensor, trigger_dag

    names = {"file_sensor": file_sensor, "time_sensor": time_sensor,
             "external_sensor": external_sensor, "trigger_dag": trigger_dag}  # fmt: skip
    with pytest.raises(DagDefinitionError) as info, DAG("d", schedule=None):
        eval(call, names)  # noqa: S307 - the test's own literals
    assert message in str(info.value)
    assert __file__ in str(info.value) or "<string>" in str(info.value)


def test_built_in_sensors_never_use_a_task_process(harness, write_dag, tmp_path):
    write_dag(
        "files.py",
        f"""
        from orchestrator import DAG
        from orchestrator.sensors import file_sensor

        with DAG("files", schedule=None) as dag:
            file_sensor("landed", "{tmp_path}/*.none", poke_interval=30)
        """,
    )
    harness.parse()
    harness.store.trigger_run("files", harness.clock.now())
    started = time.monotonic()
    _poke(harness)
    assert harness.worker._idle == [] and harness.worker._busy == []  # no child spawned
    assert time.monotonic() - started < 60  # (no timing assertion: a sanity bound)


def test_due_built_in_sensors_are_claimed_beyond_the_free_slots(harness, write_dag, tmp_path):
    """A built-in sensor's poke holds no task slot, so a worker round takes every due
    one (up to a batch) besides what its free slots take; a Python sensor's poke needs
    a slot and is claimed like a task."""
    write_dag(
        "many.py",
        f"""
        from orchestrator import DAG, task
        from orchestrator.sensors import file_sensor

        with DAG("many", schedule=None) as dag:
            for i in range(5):
                file_sensor(f"f{{i}}", "{tmp_path}/never_{{i}}", poke_interval=30)
            task.sensor(task_id="py", poke_interval=30)(lambda ctx: None)
        """,
    )
    store, clock = harness.store, harness.clock
    harness.parse()
    run = store.trigger_run("many", clock.now())
    _poke(harness)
    assert {t.state for t in store.task_instances(run.run_id)} == {"up_for_reschedule"}
    clock.advance(timedelta(seconds=30))
    lease = timedelta(seconds=30)
    states, done, claims = store.finish_round([], [], ("w", clock.now(), lease, 1, ["default"]))
    assert states == [] and done == []
    # the five file sensors beyond the one free slot, and the one slot for the Python one
    assert sorted(c.task_id for c in claims) == ["f0", "f1", "f2", "f3", "f4", "py"]
    assert all(c.try_number == 1 and c.poke_count == 1 for c in claims)
