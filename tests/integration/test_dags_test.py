"""``orchestrator dags test`` and ``dag.test()`` (issue 25 item 9): a whole run in this
process tree on a throwaway store, with mapping, a failing task and setup/teardown;
each task's state, duration and result printed; ``tasks test``'s exit statuses; and
the real store (SQLite or PostgreSQL, with its state folder) left byte-for-byte as it
was, while its variables are read as a worker would."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from orchestrator.cli import main
from orchestrator.store.core.identity import sqlite_path
from orchestrator.store.core.models import metadata

MAPPED = """
from orchestrator import DAG, setup, task, teardown

with DAG("mapped", schedule=None, params={"n": 3, "bad": 1}, retry_delay=0) as dag:
    @setup
    def create(ctx):
        return "cluster"

    @task
    def list_files(ctx):
        return [f"part-{i}.csv" for i in range(ctx.params["n"])]

    @task(retries=1)
    def load(ctx, path):
        print("loading", path, "on", ctx.ds)
        if path == f"part-{ctx.params['bad']}.csv":
            raise ValueError("corrupt " + path)
        return len(path)

    @task
    def total(ctx):
        return sum(ctx.upstream("load"))

    @teardown
    def delete(ctx):
        return ctx.variable("cluster_owner", default="nobody")

    create >> list_files >> load.expand(path=list_files) >> total >> delete
    create >> delete
"""


@pytest.fixture
def cli(settings, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)

    def run(*argv: str) -> int:
        return main(list(argv))

    return run


def _snapshot(settings) -> dict:
    """The real store as it is: the SQLite file's bytes (and its WAL's), or every row of
    every table on PostgreSQL; and every file of the state folder."""
    out: dict = {}
    path = sqlite_path(settings.database_url)
    if path is not None:
        for name in (path, path + "-wal"):
            if os.path.exists(name):
                out[name] = hashlib.sha256(Path(name).read_bytes()).hexdigest()
    else:
        engine = create_engine(settings.database_url)
        with engine.connect() as conn:
            for table in metadata.sorted_tables:
                rows = conn.execute(select(table)).all()
                out[table.name] = sorted(repr(tuple(r)) for r in rows)
        engine.dispose()
    for root, _dirs, files in os.walk(settings.state_dir):
        for f in files:
            if f.endswith("-shm"):  # SQLite's shared-memory index: readers mark it
                continue
            full = os.path.join(root, f)
            out[full] = hashlib.sha256(Path(full).read_bytes()).hexdigest()
    return out


def _prepared(cli, capsys, write_dag, settings) -> dict:
    write_dag("mapped.py", MAPPED)
    assert cli("dags", "parse") == 0
    assert cli("dags", "trigger", "mapped") == 0  # a run of its own in the real store
    assert cli("variables", "set", "cluster_owner", "ops-team") == 0
    capsys.readouterr()
    return _snapshot(settings)


def test_a_whole_run_with_mapping_and_a_failing_task_leaves_the_store_unchanged(
    cli, capsys, write_dag, settings
):
    before = _prepared(cli, capsys, write_dag, settings)
    code = cli("dags", "test", "mapped", "--conf", '{"n": 4}', "--logical-date", "2026-03-29")
    out = capsys.readouterr().out
    assert code == 1  # total is upstream_failed: the run failed
    assert _snapshot(settings) == before
    table = out[out.index("\ntask ") :]
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:] if line.strip()}
    assert rows["create"][1:3] == ["success", "1"] and rows["create"][4] == '"cluster"'
    assert rows["list_files"][1] == "success"
    assert [rows[f"load[{i}]"][1] for i in range(4)] == ["success", "failed", "success", "success"]
    assert rows["load[0]"][4] == "10" and rows["load[0]"][3].endswith("s")
    assert rows["load[1]"][2] == "2"  # retried once
    assert rows["load[1]"][4:] == ["ValueError:", "corrupt", "part-1.csv"]
    assert rows["total"][1:4] == ["upstream_failed", "0", "-"]
    assert rows["delete"][1] == "success"
    assert rows["delete"][4] == '"ops-team"'  # a variable of the real store, read
    assert "loading part-2.csv on 2026-03-29" in out  # the try's log, with the logical date
    assert "--- load[1] try 1: failed in " in out and "(to be retried)" in out
    assert "--- load[1] try 2: failed in " in out
    assert "--- total: upstream_failed" in out
    assert out.strip().endswith(": failed")


def test_a_run_that_succeeds_exits_0_and_dag_test_returns_its_outcomes(
    cli, capsys, write_dag, settings, dags_dir
):
    before = _prepared(cli, capsys, write_dag, settings)
    assert cli("dags", "test", "mapped", "--conf", '{"bad": 99}') == 0
    assert "run mapped__manual__" in capsys.readouterr().out
    from orchestrator.engine.tasktest import find_dag

    dag = find_dag(settings, "mapped")
    result = dag.test(run_conf={"n": 2, "bad": 99}, settings=settings)
    assert result.state == "success" and result.exit_code == 0
    assert [t.label for t in result.tasks] == [
        "create",
        "list_files",
        "load[0]",
        "load[1]",
        "total",
        "delete",
    ]
    assert result.task("total").result == 20 and result.task("load[1]").tries == 1
    assert all(t.duration is not None and t.duration >= 0 for t in result.tasks)
    assert _snapshot(settings) == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("dags", "test", "nope"), "no DAG 'nope'"),
        (("dags", "test", "mapped", "--conf", "{bad"), "--conf: not valid JSON"),
        (("dags", "test", "mapped", "--conf", '{"n": "three"}'), "'n'"),
        (("dags", "test", "mapped", "--logical-date", "yesterday"), "--logical-date"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_and_no_run(
    cli, capsys, write_dag, settings, argv, message
):
    before = _prepared(cli, capsys, write_dag, settings)
    assert cli(*argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("orchestrator: error: ") and message in err[0]
    assert "--- " not in captured.out
    assert _snapshot(settings) == before


def test_a_broken_file_is_named_when_the_dag_is_not_found(cli, capsys, write_dag):
    write_dag("broken.py", "from orchestrator import DAG\nDAG('x', schedule='@daily')\n")
    assert cli("dags", "test", "x") == 2
    err = capsys.readouterr().err
    assert "no DAG 'x'" in err and "broken.py:2" in err and "start_date is required" in err


def test_dag_test_at_the_bottom_of_a_dag_file_runs_it_as_a_script(tmp_path, settings):
    path = tmp_path / "script_dag.py"
    path.write_text(
        "from orchestrator import DAG, task\n"
        "with DAG('script', schedule=None) as dag:\n"
        "    @task\n"
        "    def hello(ctx):\n"
        "        print('TOP-LEVEL RAN' if False else 'hello from the task')\n"
        "        return 42\n"
        "print('TOP-LEVEL RAN', __name__)\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit(dag.test().exit_code)\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "ORCHESTRATOR_STATE_DIR": str(tmp_path / "state"),  # no database there: none needed
    }
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "hello from the task" in proc.stdout
    assert "hello  success" in proc.stdout and proc.stdout.rstrip().endswith(": success")
    # the task process imported the file as a DAG file, not as the script again
    assert proc.stdout.count("TOP-LEVEL RAN __main__") == 1
    assert not (tmp_path / "state").exists()  # nothing written where a store would be


def test_dag_test_called_while_the_file_is_imported_is_an_import_error(write_dag, settings):
    from orchestrator.authoring.loader import DagImportError, load_file

    path = write_dag(
        "unguarded.py",
        """
        from orchestrator import DAG, task
        with DAG("unguarded", schedule=None) as dag:
            task(task_id="t")(lambda: None)
        dag.test()
        """,
    )
    with pytest.raises(DagImportError) as err:
        load_file(str(path))
    assert "unguarded.py:5" in err.value.message
    assert 'put it under `if __name__ == "__main__":`' in err.value.message


def test_the_store_is_not_opened_when_no_task_reads_a_variable(cli, capsys, write_dag, settings):
    """No database at all: dags test needs none."""
    write_dag(
        "plain.py",
        """
        from orchestrator import DAG, task
        with DAG("plain", schedule=None) as dag:
            a = task(task_id="a")(lambda: 1)
            b = task(task_id="b")(lambda: 2)
            a >> b
        """,
    )
    path = sqlite_path(settings.database_url)
    if path is not None:
        os.remove(path)
    assert cli("dags", "test", "plain") == 0
    assert "run plain__manual__" in capsys.readouterr().out
    if path is not None:
        assert not os.path.exists(path)


PULLS = """
from orchestrator import DAG, task

with DAG("pulls", schedule=None) as dag:
    @task
    def first(ti):
        ti.xcom_push("note", "pushed")
        return 5

    @task
    def middle():
        return None

    @task
    def last(ti):
        return [ti.xcom_pull(task_ids="first"), ti.xcom_pull(task_ids="first", key="note")]

    first >> middle >> last
"""


def test_dags_test_pulls_and_pushes_on_its_throwaway_store(cli, capsys, write_dag, settings):
    write_dag("pulls.py", PULLS)
    assert cli("dags", "parse") == 0
    before = _snapshot(settings)
    from orchestrator.engine.tasktest import find_dag

    result = find_dag(settings, "pulls").test(settings=settings)
    assert result.state == "success"
    assert result.task("last").result == [5, "pushed"]  # first is not last's upstream
    assert _snapshot(settings) == before
