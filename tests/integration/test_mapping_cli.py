"""The CLI on mapped tasks: list --json map_index, --map-index on logs/clear/why/retry,
``tasks test`` of one instance, and the explainer's wait for the list."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from orchestrator.cli import main
from tests.helpers import Harness

SOURCE = """
from orchestrator import DAG, task

with DAG("mapcli", schedule=None, params={"n": 3, "words": ["x", "y"]}) as dag:
    @task
    def list_files(ctx):
        return [f"f{i}" for i in range(ctx.params["n"])]

    @task
    def load(ctx, path, bucket):
        ctx.log.info("loading %s into %s", path, bucket)
        if path == "f1" and ctx.try_number == 1:
            raise RuntimeError("f1 fails once")
        return path.upper()

    @task
    def shout(ctx, word):
        return word * 2

    load.partial(bucket="raw").expand(path=list_files)
    shout.expand(word=dag.param("words"))
"""


@pytest.fixture
def cli(settings, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    return lambda *argv: main(list(argv))


def test_mapped_instances_through_the_cli(cli, capsys, write_dag, store, settings, clock):
    write_dag("mapcli.py", SOURCE)
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        run = store.trigger_run("mapcli", clock.now())
        harness.tick()
        # before list_files ran: the explainer says what load waits for
        assert cli("tasks", "why", run.run_id, "load", "--json") == 0
        why = json.loads(capsys.readouterr().out)
        assert why["map_index"] == -1
        assert why["reasons"][0]["code"] == "map_source_waiting"
        assert "waiting for list_files to produce the list" in why["reasons"][0]["message"]
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    assert cli("tasks", "list", run.run_id, "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    loads = sorted((r["map_index"], r["state"]) for r in rows if r["task_id"] == "load")
    assert loads == [(0, "success"), (1, "failed"), (2, "success")]
    assert {r["map_index"] for r in rows if r["task_id"] == "list_files"} == {-1}

    assert cli("tasks", "logs", run.run_id, "load", "--map-index", "2") == 0
    assert "loading f2 into raw" in capsys.readouterr().out
    assert cli("tasks", "why", run.run_id, "load", "--map-index", "1") == 0
    assert "load[1] in" in capsys.readouterr().out
    assert cli("tasks", "logs", run.run_id, "load", "--map-index", "9") == 1
    assert "no map index 9 (its map indexes are 0..2)" in capsys.readouterr().err

    assert cli("tasks", "retry", run.run_id, "load", "--map-index", "1") == 0
    assert "reset load[1]" in capsys.readouterr().out
    harness = Harness(store, settings, clock)
    try:
        clock.advance(timedelta(minutes=1))
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    assert [t.try_number for t in store.tries(run.run_id, "load", 1)] == [1, 2]
    assert [t.try_number for t in store.tries(run.run_id, "load", 0)] == [1]
    assert json.loads(store.results(run.run_id, ["load"])["load"]) == ["F0", "F1", "F2"]

    assert cli("tasks", "clear", run.run_id, "load", "--map-index", "0", "--json") == 0
    assert json.loads(capsys.readouterr().out)["cleared"] == ["load[0]"]
    assert cli("tasks", "clear", run.run_id, "load", "--map-index", "-1") == 2  # usage error
    capsys.readouterr()


def test_tasks_test_runs_one_instance_with_an_explicit_value(cli, capsys, write_dag, store):
    write_dag("mapcli.py", SOURCE)
    assert cli("tasks", "test", "mapcli", "load", "--map-value", '{"path": "given"}') == 0
    out = capsys.readouterr().out
    assert "loading given into raw" in out and '"GIVEN"' in out
    # over params: the item by index
    assert cli("tasks", "test", "mapcli", "shout", "--map-index", "1") == 0
    assert '"yy"' in capsys.readouterr().out
    assert cli("tasks", "test", "mapcli", "load") == 2  # a bad argument (issue 25)
    assert "mapped over list_files" in capsys.readouterr().err
    assert cli("tasks", "test", "mapcli", "shout", "--map-index", "5") == 2
    assert "maps into 2 instance(s)" in capsys.readouterr().err
