"""``tasks test`` with upstream results (issue 25 item 9): given on the command line
(``--upstream-result extract='{...}'``) or read from a stored run (``--from-run``,
with its logical date and conf), a mapped instance's item from them, a shell task's
``env=``, and the exit statuses: 0 it ran, 1 it failed, 2 bad arguments."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.store.core.identity import sqlite_path
from tests.helpers import Harness

SOURCE = """
from orchestrator import DAG, task

with DAG("etl", schedule=None, params={"scale": 1}) as dag:
    @task
    def extract(ctx):
        return {"rows": 3 * ctx.params["scale"]}

    @task
    def names(ctx):
        return ["ann", "bob"]

    @task
    def load(ctx):
        data = ctx.upstream("extract")
        ctx.log.info("loading on %s", ctx.ds)
        return None if data is None else data["rows"] * 2

    @task
    def greet(ctx, name):
        return f"hi {name}"

    say = dag.shell(
        "say",
        'echo "who=$WHO task=$ORCHESTRATOR_TASK_ID try=$ORCHESTRATOR_TRY_NUMBER"',
        env={"WHO": "the-env"},
    )
    extract >> load >> say
    greet.expand(name=names)
"""


@pytest.fixture
def cli(settings, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)

    def run(*argv: str) -> int:
        return main(list(argv))

    return run


def _last_line(out: str) -> str:
    return out.strip().splitlines()[-1]


def test_upstream_results_given_on_the_command_line(cli, capsys, write_dag):
    write_dag("etl.py", SOURCE)
    assert cli("tasks", "test", "etl", "load") == 0  # none given: ctx.upstream is None
    assert _last_line(capsys.readouterr().out) == "null"
    assert cli("tasks", "test", "etl", "load", "--upstream-result", 'extract={"rows": 21}') == 0
    assert _last_line(capsys.readouterr().out) == "42"
    # a mapped instance's item from the list its source would have given
    argv = ("tasks", "test", "etl", "greet", "--upstream-result", 'names=["cy", "di"]')
    assert cli(*argv, "--map-index", "1") == 0
    assert _last_line(capsys.readouterr().out) == '"hi di"'


def test_a_shell_task_gets_its_env_and_the_workers_variables(cli, capsys, write_dag):
    write_dag("etl.py", SOURCE)
    assert cli("tasks", "test", "etl", "say") == 0
    assert "who=the-env task=say try=1" in capsys.readouterr().out


def test_upstream_results_read_from_a_stored_run(cli, capsys, write_dag, store, settings, clock):
    write_dag("etl.py", SOURCE)
    assert cli("dags", "parse") == 0
    run = store.trigger_run("etl", clock.now(), conf={"scale": 5})
    harness = Harness(store, settings, clock)
    try:
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    capsys.readouterr()
    before = _bytes(settings)
    assert cli("tasks", "test", "etl", "load", "--from-run", run.run_id) == 0
    out = capsys.readouterr().out
    assert _last_line(out) == "30"  # extract's stored {"rows": 15}
    assert f"upstream results from run {run.run_id}: extract" in out
    assert "loading on 2026-01-01" in out  # the run's logical date
    argv = ("tasks", "test", "etl", "load", "--from-run", run.run_id)
    assert cli(*argv, "--upstream-result", 'extract={"rows": 1}') == 0  # given wins
    assert _last_line(capsys.readouterr().out) == "2"
    assert cli("tasks", "test", "etl", "greet", "--from-run", run.run_id) == 0
    assert _last_line(capsys.readouterr().out) == '"hi ann"'
    assert _bytes(settings) == before  # read, never written


def _bytes(settings) -> str | None:
    path = sqlite_path(settings.database_url)
    return None if path is None else hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_task_that_fails_exits_1(cli, capsys, write_dag):
    write_dag("etl.py", SOURCE)
    argv = ("tasks", "test", "etl", "load", "--upstream-result", 'extract={"no_rows": 1}')
    assert cli(*argv) == 1
    assert "KeyError: 'rows'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--upstream-result", "extract"), "expected TASK=JSON"),
        (("--upstream-result", "extract={bad"), "extract: not valid JSON"),
        (("--upstream-result", "names=[1]"), "'names' is not an upstream task of 'load'"),
        (("--from-run", "no_such_run"), "no run with run_id 'no_such_run'"),
        (("--logical-date", "soon"), "--logical-date"),
        (("--params", "[1]"), "--params: expected a JSON object"),
    ],
)
def test_bad_arguments_exit_2(cli, capsys, write_dag, argv, message):
    write_dag("etl.py", SOURCE)
    assert cli("dags", "parse") == 0
    capsys.readouterr()
    assert cli("tasks", "test", "etl", "load", *argv) == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_from_run_of_another_dag_exits_2(cli, capsys, write_dag, store, clock):
    write_dag("etl.py", SOURCE)
    write_dag(
        "other.py",
        "from orchestrator import DAG, task\n"
        "with DAG('other', schedule=None) as dag:\n"
        "    task(task_id='x')(lambda: None)\n",
    )
    assert cli("dags", "parse") == 0
    run = store.trigger_run("other", clock.now())
    capsys.readouterr()
    assert cli("tasks", "test", "etl", "load", "--from-run", run.run_id) == 2
    assert "is of DAG 'other', not 'etl'" in capsys.readouterr().err


def test_the_mapped_source_error_says_how_to_give_the_list(cli, capsys, write_dag):
    write_dag("etl.py", SOURCE)
    assert cli("tasks", "test", "etl", "greet") == 2
    err = capsys.readouterr().err
    assert "mapped over names" in err and "--upstream-result names='[...]'" in err


TASKFLOW = """
from orchestrator import DAG, task

with DAG("flow", schedule=None) as dag:
    @task(multiple_outputs=True)
    def summarize():
        return {"total": 6, "count": 3}

    @task
    def load(total, ds, *, label):
        return f"{label}: {total} on {ds}"

    @task
    def wrong() -> dict:
        return [1]

    load(summarize()["total"], label="sum")
"""


def test_tasks_test_runs_a_taskflow_call_with_its_references_resolved(cli, capsys, write_dag):
    write_dag("flow.py", TASKFLOW)
    argv = ("tasks", "test", "flow", "load", "--logical-date", "2026-03-01")
    assert cli(*argv, "--upstream-result", 'summarize={"total": 9}') == 0
    assert _last_line(capsys.readouterr().out) == '"sum: 9 on 2026-03-01"'
    assert cli("tasks", "test", "flow", "wrong") == 1  # a -> dict task returning a list
    assert "task 'wrong' has multiple_outputs" in capsys.readouterr().out


PULLS = """
from orchestrator import DAG, task

with DAG("pulls", schedule=None) as dag:
    @task
    def extract():
        return {"rows": 4}

    @task
    def other():
        return "o"

    @task
    def report(ti):
        ti.xcom_push("seen", 1)
        return [ti.xcom_pull(task_ids="other"), ti.xcom_pull(task_ids="extract", key="rows")]

    extract >> report
"""


def test_tasks_test_pulls_from_the_stored_run_and_stores_no_push(
    cli, capsys, write_dag, store, settings, clock
):
    write_dag("pulls.py", PULLS)
    assert cli("dags", "parse") == 0
    run = store.trigger_run("pulls", clock.now())
    harness = Harness(store, settings, clock)
    try:
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    capsys.readouterr()
    before = _bytes(settings)
    assert cli("tasks", "test", "pulls", "report", "--from-run", run.run_id) == 0
    out = capsys.readouterr().out
    assert _last_line(out) == '["o", 4]'  # other is not upstream: read from the run
    assert "xcom_push seen = 1 (tasks test stores nothing)" in out
    assert _bytes(settings) == before
    assert cli("tasks", "test", "pulls", "report", "--upstream-result", 'extract={"rows": 2}') == 1
    assert "tasks test reads results of other tasks with --from-run RUN_ID" in (
        capsys.readouterr().out
    )


GROUPED = """
from orchestrator import DAG, task, task_group

with DAG("grouped", schedule=None) as dag:
    @task
    def clean(path):
        return path.upper()

    @task
    def load(row, path):
        return row + ":" + path

    @task_group
    def per_file(path):
        load(clean(path), path)

    per_file.expand(path=["a.csv", "b.csv"])
"""


def test_tasks_test_runs_a_task_of_a_mapped_group_with_its_item(cli, capsys, write_dag):
    """Issue 25 item 7: the group's item (by index, or given) fills its arguments."""
    write_dag("grouped.py", GROUPED)
    assert cli("tasks", "test", "grouped", "per_file.clean", "--map-index", "1") == 0
    assert _last_line(capsys.readouterr().out) == '"B.CSV"'
    argv = ("tasks", "test", "grouped", "per_file.load", "--map-value", '{"path": "q"}')
    assert cli(*argv, "--upstream-result", 'per_file.clean="Q"') == 0
    assert _last_line(capsys.readouterr().out) == '"Q:q"'


def test_a_shell_task_runs_in_its_cwd_or_its_dag_files_folder(cli, capsys, write_dag, dags_dir):
    write_dag(
        "places.py",
        """
        from orchestrator import DAG

        with DAG("places", schedule=None) as dag:
            dag.shell("there", "pwd", cwd="/tmp")
            dag.shell("here", "pwd")
        """,
    )
    assert cli("tasks", "test", "places", "there") == 0
    assert "\n/tmp\n" in capsys.readouterr().out
    assert cli("tasks", "test", "places", "here") == 0  # as a worker runs it
    assert f"\n{dags_dir}\n" in capsys.readouterr().out
