"""The triggerer's event loop (issue 30 item 4): a trigger that blocks it (a
``time.sleep`` inside ``run``) is named, with its file and line, in the log and in the
store (metrics) within a second, and the other triggers move to a fresh loop and keep
firing while it blocks."""

from __future__ import annotations

import logging
import time

from orchestrator.engine.triggerer import Triggerer
from orchestrator.observability.metrics import render

DAG = """
import asyncio, os, time
from orchestrator import DAG, BaseTrigger, TriggerEvent, task

class Sleepy(BaseTrigger):
    def serialize(self):
        return (f"{__name__}.Sleepy", {})

    async def run(self):
        await asyncio.sleep(0.2)
        time.sleep(4)  # blocks the whole loop
        yield TriggerEvent("slept")

class Flag(BaseTrigger):
    def __init__(self, path):
        super().__init__()
        self.path = path

    def serialize(self):
        return (f"{__name__}.Flag", {"path": self.path})

    async def run(self):
        while not os.path.exists(self.path):
            await asyncio.sleep(0.02)
        yield TriggerEvent("flag")

with DAG("loop", schedule=None) as dag:
    @task
    def sleepy(ctx):
        ctx.defer(trigger=Sleepy(), method_name="resume")

    @task
    def flag(ctx):
        ctx.defer(trigger=Flag(%r), method_name="resume")

def resume(ctx, event):
    return event
"""


def test_a_blocking_trigger_is_named_within_a_second_and_the_others_keep_firing(
    harness, write_dag, tmp_path, caplog
):
    store, clock = harness.store, harness.clock
    flag = tmp_path / "flag"
    write_dag("loop.py", DAG % str(flag))
    harness.parse()
    run = store.trigger_run("loop", clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    assert {t.task_id: t.state for t in store.task_instances(run.run_id)} == {
        "sleepy": "deferred", "flag": "deferred"}  # fmt: skip
    sleepy = store.task_instance(run.run_id, "sleepy").trigger_id
    t = Triggerer(store, clock, harness.settings, triggerer_id="t-loop")
    t.start(clock.now())
    caplog.set_level(logging.WARNING, logger="orchestrator.engine")
    try:
        t.tick(clock.now(), force=True)
        assert t.held() == 2
        time.sleep(0.2)  # Sleepy is now inside time.sleep
        blocked_at = time.monotonic()
        named = None
        while time.monotonic() - blocked_at < 1.5:
            row = store.triggerers()[0]
            if row.blocked_by:
                named = time.monotonic() - blocked_at
                break
            time.sleep(0.02)
        assert named is not None and named <= 1.0, f"named after {named}"
        row = store.triggerers()[0]
        assert f"trigger {sleepy} (" in row.blocked_by and "loop.py:" in row.blocked_by
        assert "in run" in row.blocked_by and row.blocked_count == 1
        assert any("event loop blocked" in r.message and f"trigger {sleepy}" in r.message
                   for r in caplog.records)  # fmt: skip
        text = render(store, clock.now()).decode()
        assert 'orchestrator_triggerer_loop_blocked_total{triggerer="t-loop"} 1.0' in text
        # the other trigger fires while Sleepy still blocks its old loop
        flag.write_text("x")
        fired = None
        while time.monotonic() - blocked_at < 3.0:
            t.tick(clock.now())
            if store.task_instance(run.run_id, "flag").state == "queued":
                fired = time.monotonic() - blocked_at
                break
            t.wait(0.02)
        assert fired is not None and fired < 2.5, "the other trigger did not fire while blocked"
        assert store.task_instance(run.run_id, "sleepy").state == "deferred"
        # and the blocker still fires when it returns
        end = time.monotonic() + 10
        while store.task_instance(run.run_id, "sleepy").state == "deferred":
            assert time.monotonic() < end
            t.tick(clock.now())
            t.wait(0.05)
        assert store.task_instance(run.run_id, "sleepy").state == "queued"
    finally:
        t.close(clock.now())
