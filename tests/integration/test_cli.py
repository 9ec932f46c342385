"""The CLI against a real store: output, --json field names, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from orchestrator.cli import main
from tests.helpers import Harness

DAG_SOURCE = """
from orchestrator import DAG, task

with DAG("hello", schedule=None, params={"n": 1}, description="says hello") as dag:
    @task
    def say(ctx):
        ctx.log.info("hello number %s", ctx.params["n"])
        return ctx.params["n"]

    @task
    def after(ctx):
        return ctx.upstream("say") + 1

    say >> after
"""


@pytest.fixture
def cli(settings, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)

    def run(*argv: str) -> int:
        return main(list(argv))

    return run


def test_trigger_run_and_inspect_with_json(cli, capsys, write_dag, store, settings, clock):
    write_dag("hello.py", DAG_SOURCE)
    assert cli("dags", "parse") == 0
    capsys.readouterr()
    assert cli("dags", "list", "--json") == 0
    [dag] = json.loads(capsys.readouterr().out)
    assert dag["dag_id"] == "hello" and dag["is_paused"] is False

    assert cli("dags", "trigger", "hello", "--conf", '{"n": 41}', "--json") == 0
    run = json.loads(capsys.readouterr().out)
    assert run["state"] == "queued" and run["run_type"] == "manual" and run["conf"] == {"n": 41}

    harness = Harness(store, settings, clock)
    try:
        harness.run_until_finished(run["run_id"])
    finally:
        harness.close()

    assert cli("runs", "list", "hello", "--json") == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert {
        "dag_id",
        "run_id",
        "logical_date",
        "state",
        "run_type",
        "start_date",
        "end_date",
    } <= set(listed)
    assert listed["state"] == "success"

    assert cli("tasks", "list", run["run_id"], "--json") == 0
    tis = json.loads(capsys.readouterr().out)
    assert [(t["task_id"], t["state"], t["try_number"]) for t in tis] == [
        ("say", "success", 1),
        ("after", "success", 1),
    ]
    assert cli("tasks", "logs", run["run_id"], "say") == 0
    assert "hello number 41" in capsys.readouterr().out

    assert cli("tasks", "clear", run["run_id"], "say", "--downstream") == 0
    assert "cleared say, after" in capsys.readouterr().out
    assert store.get_run(run["run_id"]).state == "running"


def test_tasks_test_runs_in_process_without_touching_the_store(cli, capsys, write_dag, store):
    write_dag("hello.py", DAG_SOURCE)
    assert cli("tasks", "test", "hello", "say", "--params", '{"n": 7}') == 0
    out = capsys.readouterr().out
    assert "hello number 7" in out and out.strip().endswith("7")
    assert store.list_runs() == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("dags", "trigger", "nope"), "no DAG with dag_id 'nope'"),
        (("dags", "trigger", "hello", "--conf", "{bad"), "--conf: not valid JSON"),
        (("dags", "trigger", "hello", "--conf", "[1]"), "--conf: expected a JSON object"),
        (("runs", "show", "missing_run"), "no run with run_id 'missing_run'"),
        (("tasks", "logs", "missing_run", "say"), "no task 'say'"),
        (("dags", "pause", "nope"), "no DAG with dag_id 'nope'"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_1(cli, capsys, write_dag, argv, message):
    write_dag("hello.py", DAG_SOURCE)
    assert cli("dags", "parse") == 0
    capsys.readouterr()
    assert cli(*argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("orchestrator: error: ")
    assert message in err[0]


def test_bad_setting_names_the_variable(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "dags", "list"],
        env={"ORCHESTRATOR_LEASE_SECONDS": "ten", "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert (
        proc.stderr.strip()
        == "orchestrator: error: ORCHESTRATOR_LEASE_SECONDS: expected float, got 'ten'"
    )


def test_commands_on_an_empty_database_say_to_upgrade(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "runs", "list"],
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "run 'orchestrator db upgrade' first" in proc.stderr
