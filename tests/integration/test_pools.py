"""Pools: a named slot limit no number of claiming workers can exceed."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from orchestrator.cli import main
from orchestrator.scheduling.explain import explain_task
from orchestrator.store import Store
from tests.helpers import Harness

POOLED = """
from orchestrator import DAG, task

with DAG("pooled", schedule=None) as dag:
    for i in range(6):
        task(task_id=f"small_{i}", pool="warehouse")(lambda ctx: None)
    task(task_id="big", pool="warehouse", pool_slots=2)(lambda ctx: None)
    task(task_id="free")(lambda ctx: None)
"""

LEASE = timedelta(seconds=30)


@pytest.fixture
def pooled_run(store, settings, clock, write_dag):
    write_dag("pooled.py", POOLED)
    harness = Harness(store, settings, clock)
    harness.parse()
    run = store.trigger_run("pooled", clock.now())
    harness.tick()
    yield run
    harness.close()


def running_in_pool(store: Store, run_id: str) -> int:
    slots = {f"small_{i}": 1 for i in range(6)} | {"big": 2}
    return sum(
        slots.get(t.task_id, 0) for t in store.task_instances(run_id) if t.state == "running"
    )


def test_claims_never_exceed_the_pool(store, clock, pooled_run):
    store.set_pool("warehouse", 3, clock.now())
    first = store.claim("w1", clock.now(), LEASE, limit=10)
    # the unpooled task, and pooled tasks up to 3 slots
    assert "free" in {c.task_id for c in first}
    assert running_in_pool(store, pooled_run.run_id) <= 3
    assert store.claim("w2", clock.now(), LEASE, limit=10) == []  # the pool is full
    [pool] = store.pools()
    assert (pool.name, pool.slots, pool.used) == (
        "warehouse",
        3,
        running_in_pool(store, pooled_run.run_id),
    )
    # finishing frees slots for the next claim
    done = next(c for c in first if c.task_id != "free")
    assert store.finish_success(done, None, clock.now())
    more = store.claim("w2", clock.now(), LEASE, limit=10)
    assert more and running_in_pool(store, pooled_run.run_id) <= 3


def test_a_missing_pool_holds_its_tasks_and_the_explainer_says_so(
    store, clock, pooled_run, settings
):
    claimed = store.claim("w1", clock.now(), LEASE, limit=10)
    assert [c.task_id for c in claimed] == ["free"]
    facts = store.task_facts(
        pooled_run.run_id, "small_0", clock.now(), worker_stale_after=timedelta(seconds=30)
    )
    messages = [r.message for r in explain_task(facts)]
    assert any("pool warehouse does not exist" in m for m in messages), messages
    store.set_pool("warehouse", 1, clock.now())
    assert len(store.claim("w1", clock.now(), LEASE, limit=10)) == 1
    facts = store.task_facts(
        pooled_run.run_id, "small_5", clock.now(), worker_stale_after=timedelta(seconds=30)
    )
    assert any("pool warehouse is full (1 slots)" in r.message for r in explain_task(facts))


def test_concurrent_claimers_never_exceed_the_pool(store, settings, clock, pooled_run):
    store.set_pool("warehouse", 3, clock.now())
    stores = [Store(settings.database_url) for _ in range(4)]
    peak = []
    errors = []

    def claimer(s: Store, name: str) -> None:
        try:
            for _ in range(5):
                for c in s.claim(name, clock.now(), LEASE, limit=3):
                    peak.append(running_in_pool(s, pooled_run.run_id))
                    if c.task_id != "free":
                        s.finish_success(c, None, clock.now())
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(s, f"w{i}")) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for s in stores:
        s.dispose()
    assert not errors
    assert peak and max(peak) <= 3
    states = {t.task_id: t.state for t in store.task_instances(pooled_run.run_id)}
    assert all(states[f"small_{i}"] == "success" for i in range(6)) and states["big"] == "success"


def test_pools_cli(settings, monkeypatch, capsys, store):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    assert main(["pools", "set", "gpu", "2", "--description", "two cards"]) == 0
    assert main(["pools", "list", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"name": "gpu"' in out and '"slots": 2' in out
    assert main(["pools", "set", "gpu", "two"]) == 2  # a usage error (issue 13, item 5)
    assert "argument SLOTS: expected a whole number" in capsys.readouterr().err
    assert main(["pools", "delete", "nope"]) == 1
    assert "no pool named 'nope'" in capsys.readouterr().err
