"""Issue 24 item 6: a DAG whose trigger_dag tasks target itself made 2,479 runs in 20 s.
A self-trigger is refused at parse time unless allowed explicitly; every chain of runs
made by trigger_dag tasks carries its depth (dag_runs.trigger_depth, migration 0030)
and the task that would pass max_trigger_depth fails, naming the chain. Both backends,
the real scheduler, worker and DAG processor on a fake clock."""

from __future__ import annotations

import pytest

from orchestrator import DAG
from orchestrator.errors import DagDefinitionError
from orchestrator.sensors import trigger_dag
from tests.helpers import Harness

SELF = """
from orchestrator import DAG
from orchestrator.sensors import trigger_dag

with DAG("loop", schedule=None) as dag:
    trigger_dag("again", "loop"{allow})
    trigger_dag("and_again", "loop"{allow})
"""

PING_PONG = """
from orchestrator import DAG
from orchestrator.sensors import trigger_dag

with DAG("ping", schedule=None) as ping:
    trigger_dag("to_pong", "pong")

with DAG("pong", schedule=None) as pong:
    trigger_dag("to_ping", "ping")
"""


def test_a_self_trigger_is_refused_at_parse_time_naming_file_and_line(harness, write_dag):
    write_dag("loop.py", SELF.format(allow=""))
    assert harness.parse().errors == 1
    [error] = harness.store.import_errors()
    assert "loop.py:6" in error.message and "triggers itself" in error.message
    assert "allow_self_trigger=True" in error.message
    assert harness.store.list_dags() == []


def test_allow_self_trigger_must_be_true_itself():
    with pytest.raises(DagDefinitionError, match="triggers itself"), DAG("d", schedule=None):
        trigger_dag("t", "d", allow_self_trigger="yes")
    with DAG("d", schedule=None) as dag:
        trigger_dag("t", "d", allow_self_trigger=True)
    assert "t" in dag.tasks


def _drain(harness: Harness, rounds: int = 60) -> None:
    for _ in range(rounds):
        harness.tick()
        harness.worker.run_until_idle()
        harness.tick()


def _runs(store, *dag_ids):
    return [r for d in dag_ids for r in store.list_runs(d, limit=10_000)]


def test_an_allowed_self_trigger_stops_at_max_trigger_depth(store, settings, clock, write_dag):
    write_dag("loop.py", SELF.format(allow=", allow_self_trigger=True"))
    store.max_trigger_depth = 3  # what Store(url, settings=...) takes from the setting
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().errors == 0
        first = store.trigger_run("loop", clock.now())
        _drain(harness)
    finally:
        harness.close()
    runs = _runs(store, "loop")
    assert len(runs) == 1 + 2 + 4 + 8  # depths 0..3, two triggers each; not thousands
    depths = sorted(store.trigger_depth(r.run_id) for r in runs)
    assert depths == [0] + [1] * 2 + [2] * 4 + [3] * 8
    deepest = [r for r in runs if store.trigger_depth(r.run_id) == 3]
    for run in deepest:
        ti = store.task_instance(run.run_id, "again")
        assert ti.state == "failed"
        assert "over max_trigger_depth (3)" in ti.error
        assert ti.error.startswith("not triggering DAG 'loop'")
        assert f"loop:{first.run_id} -> " in ti.error  # the chain, from its first run
        assert ti.error.count(" -> ") == 4  # 4 runs in the chain, then the refused target


def test_a_chain_through_two_dags_stops_too(store, settings, clock, write_dag):
    write_dag("ping_pong.py", PING_PONG)
    store.max_trigger_depth = 4
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().errors == 0
        store.trigger_run("ping", clock.now())
        _drain(harness)
    finally:
        harness.close()
    runs = _runs(store, "ping", "pong")
    assert len(runs) == 5  # ping, pong, ping, pong, ping: depths 0..4
    [last] = [r for r in runs if store.trigger_depth(r.run_id) == 4]
    assert last.dag_id == "ping"
    ti = store.task_instance(last.run_id, "to_pong")
    assert ti.state == "failed" and "ping:" in ti.error and "pong:" in ti.error
    assert ti.error.endswith("-> pong")


def test_the_store_takes_the_setting(settings):
    from orchestrator.store import Store

    assert settings.max_trigger_depth == 10
    store = Store(settings.database_url, settings=settings.with_(max_trigger_depth=2))
    try:
        assert store.max_trigger_depth == 2
    finally:
        store.dispose()
