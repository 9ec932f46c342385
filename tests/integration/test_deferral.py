"""Deferrable tasks (issue 30 item 1), on both backends: a task defers to a trigger,
gives up its slot, and its trigger's event resumes it in the same try, once; a trigger
that raises or times out fails the try; a bad deferral fails at once, saying why."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

from orchestrator.engine.triggerer import Triggerer

DAG = """
import asyncio, json, os
from datetime import timedelta
from orchestrator import DAG, BaseTrigger, TriggerEvent, task

class FlagTrigger(BaseTrigger):
    def __init__(self, path, boom=False):
        super().__init__()
        self.path, self.boom = path, boom

    def serialize(self):
        return (f"{{__name__}}.FlagTrigger", {{"path": self.path, "boom": self.boom}})

    async def run(self):
        while not os.path.exists(self.path):
            await asyncio.sleep(0.02)
        if self.boom:
            raise RuntimeError("the trigger broke")
        with open(self.path) as f:
            yield TriggerEvent(json.load(f))

with DAG("defers", schedule=None, default_retries={retries}) as dag:
    @task
    def wait(ctx):
        ctx.log.info("before deferring, try %s", ctx.try_number)
        ctx.defer(trigger=FlagTrigger({flag!r}, boom={boom}), method_name={method!r},
                  kwargs={{"unit": "rows"}}, timeout={timeout})

    @task
    def after(ctx):
        return {{"got": ctx.upstream("wait")}}

    wait >> after

def resume(ctx, event, unit):
    ctx.log.info("resumed with %s in try %s", event, ctx.try_number)
    return {{"n": event["n"], "unit": unit, "try": ctx.try_number}}
"""


def _dag(write_dag, tmp_path: Path, *, boom=False, method="resume", timeout=None, retries=0):
    flag = tmp_path / "flag.json"
    write_dag("defers.py", DAG.format(flag=str(flag), boom=boom, method=method,
                                      timeout=timeout, retries=retries))  # fmt: skip
    return flag


def _result(store, run_id: str, task_id: str):
    return json.loads(store.results(run_id, [task_id])[task_id])


def _start(harness) -> str:
    harness.parse()
    run = harness.store.trigger_run("defers", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    harness.tick()
    return run.run_id


@pytest.fixture
def triggerer(harness):
    t = Triggerer(harness.store, harness.clock, harness.settings, triggerer_id="test-triggerer")
    t.start(harness.clock.now())
    yield t
    t.close(harness.clock.now())


def _until(triggerer, now, done, seconds=10.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        triggerer.tick(now(), force=True)
        if done():
            return
        triggerer.wait(0.05)
    raise AssertionError("the triggerer did not get there in time")


def test_a_deferred_task_gives_up_its_slot_and_its_event_resumes_the_same_try(
    harness, write_dag, tmp_path, triggerer
):
    store, clock = harness.store, harness.clock
    flag = _dag(write_dag, tmp_path)
    run_id = _start(harness)
    ti = store.task_instance(run_id, "wait")
    assert (ti.state, ti.try_number, ti.owner) == ("deferred", 1, None)
    [deferred] = store.deferred_instances()
    assert deferred.classpath.endswith(".FlagTrigger") and deferred.triggerer_id is None
    assert [t.state for t in store.tries(run_id, "wait")] == ["deferred"]
    harness.worker.run_until_idle()  # nothing to run: the deferred try holds no slot
    assert store.task_instance(run_id, "wait").state == "deferred"

    triggerer.tick(clock.now(), force=True)
    assert store.deferred_instances()[0].triggerer_id == "test-triggerer"
    flag.write_text(json.dumps({"n": 42}))
    _until(triggerer, clock.now, lambda: store.task_instance(run_id, "wait").state == "queued")
    assert store.deferred_instances() == []
    run = harness.run_until_finished(run_id)
    assert run.state == "success"
    ti = store.task_instance(run_id, "wait")
    assert ti.try_number == 1
    assert _result(store, run_id, "wait") == {"n": 42, "unit": "rows", "try": 1}
    [one_try] = store.tries(run_id, "wait")
    assert one_try.state == "success"
    text = Path(harness.settings.log_dir, one_try.log_path).read_text()
    assert "before deferring, try 1" in text and "deferred: waiting for trigger" in text
    assert "resumed with {'n': 42} in try 1" in text
    assert _result(store, run_id, "after") == {"got": {"n": 42, "unit": "rows", "try": 1}}
    kinds = [e.kind for e in store.events(dag_id="defers", limit=100)]
    assert "task_deferred" in kinds and "task_resumed" in kinds


def test_an_event_resumes_its_task_once_whoever_fires_it(harness, write_dag, tmp_path):
    store = harness.store
    _dag(write_dag, tmp_path)
    run_id = _start(harness)
    [d] = store.deferred_instances()
    now = harness.clock.now()
    # two triggerers racing with the same trigger's event (one lost its lease meanwhile)
    assert store.fire_triggers({d.trigger_id: json.dumps({"n": 1})}, now) == [d.ti_id]
    assert store.fire_triggers({d.trigger_id: json.dumps({"n": 2})}, now) == []
    ti = store.task_instance(run_id, "wait")
    assert ti.state == "queued" and ti.try_number == 1
    assert harness.run_until_finished(run_id).state == "success"
    assert _result(store, run_id, "wait")["n"] == 1


def test_a_trigger_that_raises_fails_its_task_with_the_traceback(
    harness, write_dag, tmp_path, triggerer
):
    store, clock = harness.store, harness.clock
    flag = _dag(write_dag, tmp_path, boom=True)
    run_id = _start(harness)
    flag.write_text("{}")
    _until(triggerer, clock.now, lambda: store.task_instance(run_id, "wait").state == "failed")
    ti = store.task_instance(run_id, "wait")
    assert "RuntimeError: the trigger broke" in ti.error and "Traceback" in ti.error
    assert "in run" in ti.error  # the trigger's own frame
    [t] = store.tries(run_id, "wait")
    assert t.state == "failed"
    assert store.deferred_instances() == []


def test_a_deferral_past_its_timeout_fails_the_try_and_is_retried(
    harness, write_dag, tmp_path, triggerer
):
    store, clock = harness.store, harness.clock
    _dag(write_dag, tmp_path, timeout="timedelta(minutes=5)", retries=1)
    run_id = _start(harness)
    triggerer.tick(clock.now(), force=True)
    clock.advance(timedelta(minutes=4))
    triggerer.tick(clock.now(), force=True)
    assert store.task_instance(run_id, "wait").state == "deferred"
    clock.advance(timedelta(minutes=2))
    triggerer.tick(clock.now(), force=True)
    ti = store.task_instance(run_id, "wait")
    assert ti.state == "up_for_retry" and "did not fire before the deferral's timeout" in ti.error
    assert ti.next_method is None  # the retry starts over from the task
    clock.advance(timedelta(minutes=10))
    harness.tick()
    harness.worker.run_until_idle()
    ti = store.task_instance(run_id, "wait")
    assert (ti.state, ti.try_number) == ("deferred", 2)  # the retry deferred again
    assert [t.state for t in store.tries(run_id, "wait")] == ["failed", "deferred"]


def test_a_method_name_the_dag_file_lacks_fails_the_try_at_once(harness, write_dag, tmp_path):
    _dag(write_dag, tmp_path, method="nope")
    run_id = _start(harness)
    ti = harness.store.task_instance(run_id, "wait")
    assert ti.state == "failed"
    assert "cannot defer: method_name 'nope' is not a function of" in ti.error
    assert harness.store.deferred_instances() == []


def test_a_trigger_class_that_cannot_be_imported_fails_the_try_naming_the_file(
    harness, write_dag, tmp_path
):
    source = DAG.format(flag="x", boom=False, method="resume", timeout=None, retries=0).replace(
        'f"{__name__}.FlagTrigger"', '"no_such_module.FlagTrigger"'
    )
    write_dag("defers.py", source)
    run_id = _start(harness)
    ti = harness.store.task_instance(run_id, "wait")
    assert ti.state == "failed"
    assert "defers.py: trigger class 'no_such_module.FlagTrigger' cannot be imported" in ti.error
    assert "ModuleNotFoundError" in ti.error


def test_clearing_a_deferred_task_drops_its_trigger(harness, write_dag, tmp_path, triggerer):
    store, clock = harness.store, harness.clock
    flag = _dag(write_dag, tmp_path)
    run_id = _start(harness)
    triggerer.tick(clock.now(), force=True)
    assert triggerer.held() == 1
    store.mark_task(run_id, "wait", "failed", clock.now())
    assert store.tries(run_id, "wait")[0].state == "marked_failed"
    triggerer.tick(clock.now(), force=True)
    assert triggerer.held() == 0 and store.deferred_instances() == []
    flag.write_text(json.dumps({"n": 1}))
    triggerer.wait(0.2)
    triggerer.tick(clock.now(), force=True)
    assert store.task_instance(run_id, "wait").state == "failed"  # no resume


OPERATOR_DAG = """
import asyncio, json, os
from datetime import datetime
from orchestrator.airflow import DAG, BaseOperator, BaseTrigger, TriggerEvent

class FileTrigger(BaseTrigger):
    def __init__(self, path):
        super().__init__()
        self.path = path

    def serialize(self):
        return (f"{{__name__}}.FileTrigger", {{"path": self.path}})

    async def run(self):
        while not os.path.exists(self.path):
            await asyncio.sleep(0.02)
        with open(self.path) as f:
            yield TriggerEvent(json.load(f))

class WaitForFileOperator(BaseOperator):
    template_fields = ("path",)

    def __init__(self, path, unit, **kwargs):
        super().__init__(**kwargs)
        self.path, self.unit = path, unit

    def execute(self, context):
        self.defer(trigger=FileTrigger(self.path), method_name="execute_complete",
                   kwargs={{"seen_in": context["ti"].try_number}})

    def execute_complete(self, context, event=None, seen_in=None):
        return {{"rows": event["rows"], "unit": self.unit, "path": self.path,
                 "try": context["ti"].try_number, "seen_in": seen_in}}

with DAG(dag_id="defers_op", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
    WaitForFileOperator(task_id="wait", path={flag!r} + "{{{{ '' }}}}", unit="rows")
"""


def test_an_operator_defers_with_self_defer_and_resumes_in_its_method(
    harness, write_dag, tmp_path, triggerer
):
    """Issue 30: Airflow's operator-class deferral (orchestrator.airflow), as Airflow's
    deferrable operators write it: self.defer(...) then execute_complete(context, event)."""
    store, clock = harness.store, harness.clock
    flag = tmp_path / "ready.json"
    write_dag("defers_op.py", OPERATOR_DAG.format(flag=str(flag)))
    harness.parse()
    assert store.import_errors() == []
    run = store.trigger_run("defers_op", clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    assert store.task_instance(run.run_id, "wait").state == "deferred"
    triggerer.tick(clock.now(), force=True)
    flag.write_text(json.dumps({"rows": 7}))
    _until(triggerer, clock.now, lambda: store.task_instance(run.run_id, "wait").state == "queued")
    assert harness.run_until_finished(run.run_id).state == "success"
    assert _result(store, run.run_id, "wait") == {
        "rows": 7, "unit": "rows", "path": str(flag), "try": 1, "seen_in": 1,
    }  # fmt: skip
