"""Triggerers share triggers through leases (issue 30): 1,000 deferred tasks wait on
one triggerer; it is SIGKILLed, and another takes every trigger within one lease; the
event then resumes each task exactly once, in its first try."""

from __future__ import annotations

import json
import signal
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from orchestrator.store.core import models as m
from tests.system.cluster import cluster, pid_of, wait_for

pytestmark = pytest.mark.system
N = 1000
LEASE = 3.0

TRIGGER = """
import asyncio, os
from orchestrator import BaseTrigger, TriggerEvent

class FlagTrigger(BaseTrigger):
    def __init__(self, path):
        super().__init__()
        self.path = path

    def serialize(self):
        return ("flagtrigger.FlagTrigger", {"path": self.path})

    async def run(self):
        while not os.path.exists(self.path):
            await asyncio.sleep(0.5)
        yield TriggerEvent({"flag": self.path})
"""

DAG = """
from orchestrator import DAG, task

with DAG("many", schedule=None, max_active_tasks=2000) as dag:
    @task
    def wait(ctx, n):
        raise RuntimeError("deferred by the test, never run from the start")

    wait.expand(n=list(range(%d)))

def resume(ctx, event):
    return {"n": ctx.map_index, "event": event}
"""


def _holders(store) -> dict[str | None, int]:
    t = m.triggers
    with store.read() as conn:
        return dict(
            conn.execute(select(t.c.triggerer_id, func.count()).group_by(t.c.triggerer_id)).all()
        )


def test_a_killed_triggerers_triggers_are_taken_within_one_lease_and_fire_once(
    harness, write_dag, settings, tmp_path
):
    store = harness.store
    write_dag("flagtrigger.py", TRIGGER)
    write_dag("many.py", DAG % N)
    assert harness.parse().dags == 1
    run = store.trigger_run("many", harness.clock.now())
    harness.tick()
    harness.tick()  # the mapped task expands
    flag = tmp_path / "flag"
    defer = {
        "classpath": "flagtrigger.FlagTrigger",
        "kwargs": json.dumps({"path": str(flag)}),
        "method_name": "resume",
        "next_kwargs": "{}",
        "timeout": None,
    }
    deferred = 0
    while deferred < N:  # the tries defer at once (the worker's part is tested elsewhere)
        claims = store.claim("setup", harness.clock.now(), timedelta(minutes=5), limit=200)
        assert claims, f"only {deferred} claimed"
        for c in claims:
            assert store.defer_task(c, defer, harness.clock.now())
        deferred += len(claims)
    assert store.count_deferred() == N

    env = {"ORCHESTRATOR_LEASE_SECONDS": str(LEASE), "ORCHESTRATOR_HEARTBEAT_SECONDS": "1",
           "ORCHESTRATOR_WORKER_POLL_SECONDS": "0.2", "ORCHESTRATOR_WORKER_CONCURRENCY": "4"}  # fmt: skip
    with cluster(settings, tmp_path, **env) as c:
        first = c.start("triggerer")
        wait_for(lambda: len(_holders(store)) == 1 and None not in _holders(store),
                 "one triggerer to hold every trigger", 60)  # fmt: skip
        [holder] = _holders(store)
        assert pid_of(holder) == first.pid
        second = c.start("triggerer")
        wait_for(lambda: len(store.triggerers()) == 2, "the second triggerer to register", 30)
        time.sleep(1.5)  # a second triggerer finds nothing free: all are leased
        assert _holders(store) == {holder: N}
        c.kill(first, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: set(_holders(store)) - {holder, None}
                 and _holders(store).get(next(iter(set(_holders(store)) - {holder, None}))) == N,
                 "the other triggerer to take every trigger", 30)  # fmt: skip
        taken = time.monotonic() - killed
        [new] = set(_holders(store))
        assert pid_of(new) == second.pid
        assert taken <= LEASE + 1.5, f"took {taken:.1f}s, lease {LEASE}s"

        flag.write_text("x")
        c.start("worker")
        c.start("scheduler")
        wait_for(lambda: store.get_run(run.run_id).state == "success",
                 "every task to resume and finish", 120)  # fmt: skip
    tis = [t for t in store.task_instances(run.run_id) if t.task_id == "wait"]
    assert len(tis) == N and all(t.state == "success" and t.try_number == 1 for t in tis)
    tries = m.task_tries
    with store.read() as conn:
        per_ti = conn.execute(select(tries.c.ti_id, func.count()).group_by(tries.c.ti_id)).all()
        resumed = conn.execute(
            select(func.count()).where(m.events.c.kind == "task_resumed")
        ).scalar_one()
    assert len(per_ti) == N and {n for _, n in per_ti} == {1}
    assert resumed == N  # each event resumed its task exactly once
    results = store.instance_results(run.run_id)
    assert sorted(json.loads(results[("wait", i)])["n"] for i in range(N)) == list(range(N))
    print(f"triggers taken over {taken:.2f}s after the kill (lease {LEASE}s)")
