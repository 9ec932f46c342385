"""Airflow's command-line habits as aliases of our commands (issue 26 item 3), on both
backends: dags list-runs / list-import-errors / state / next-execution, tasks list DAG,
tasks clear DAG -t ... across runs (with its confirmation), backfill create, -c on
trigger, a positional date on tasks test and dags test, and "did you mean"."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from orchestrator.cli import main
from tests.helpers import Harness

SOURCE = """
from datetime import datetime
from orchestrator import DAG, task

with DAG("etl", schedule=None) as etl:
    @task
    def extract(ctx):
        return ctx.logical_date.isoformat()

    @task
    def load(ctx):
        if ctx.conf.get("fail"):
            raise ValueError("boom")
        return 2

    @task
    def report(ctx):
        return 3

    extract >> load >> report

with DAG("list", schedule="@daily", start_date=datetime(2026, 1, 1), paused=True) as named_list:
    named_list.shell("only", "true")

for name in ("create", "status", "cancel"):  # named like sub-verbs, as "list" above
    with DAG(name, schedule="@daily", start_date=datetime(2026, 1, 1), paused=True) as d:
        d.shell("only", "true")
"""

DAY = [datetime(2026, 1, d, tzinfo=UTC) for d in (1, 2, 3)]


@pytest.fixture
def cli(settings, monkeypatch, write_dag):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    write_dag("habits.py", SOURCE)
    write_dag("broken.py", "import nothing_here\n")
    main(["dags", "parse"])  # 1: broken.py is an import error
    return lambda *argv: main(list(argv))


@pytest.fixture
def etl_runs(cli, store, settings, clock):
    """Three finished runs of etl: day 1 success, day 2 failed (load), day 3 success."""
    harness = Harness(store, settings, clock)
    runs = []
    try:
        for day in DAY:
            conf = {"fail": True} if day.day == 2 else {}  # not a param: kept (issue 26)
            run = store.trigger_run("etl", clock.now(), conf=conf, logical_date=day)
            runs.append(harness.run_until_finished(run.run_id))
    finally:
        harness.close()
    assert [r.state for r in runs] == ["success", "failed", "success"]
    return runs


def _states(store, run) -> dict[str, str]:
    return {t.task_id: t.state for t in store.task_instances(run.run_id)}


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# -- dags ----------------------------------------------------------------------------


def test_dags_list_runs_and_list_import_errors_are_runs_list_and_dags_errors(cli, etl_runs, capsys):
    capsys.readouterr()
    assert cli("dags", "list-runs", "etl", "--json") == 0
    alias = json.loads(capsys.readouterr().out)
    assert cli("runs", "list", "etl", "--json") == 0
    assert alias == json.loads(capsys.readouterr().out)
    assert [r["state"] for r in alias] == ["success", "failed", "success"]  # newest first
    assert cli("dags", "list-runs", "etl", "-o", "json") == 0  # Airflow's -o
    assert json.loads(capsys.readouterr().out) == alias
    assert cli("dags", "list-runs", "etl", "--json", "-o", "table") == 0  # the last wins
    assert capsys.readouterr().out.startswith("run_id ")
    assert cli("dags", "list-runs", "etl", "-o", "yaml") == 2
    assert "argument -o/--output: invalid choice: 'yaml'" in _one_error_line(capsys)
    assert cli("dags", "list-runs", "etl", "--state", "failed", "--json") == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [etl_runs[1].run_id]
    assert cli("dags", "list-import-errors") == 0
    out = capsys.readouterr().out
    assert "broken.py" in out and "nothing_here" in out
    assert cli("dags", "errors") == 0 and capsys.readouterr().out == out


def test_dags_list_runs_takes_airflows_date_range_and_no_backfill(
    cli, etl_runs, store, clock, capsys
):
    capsys.readouterr()
    assert cli("dags", "list-runs", "etl", "-s", "2026-01-02", "-e", "2026-01-02", "--json") == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [etl_runs[1].run_id]
    assert cli("dags", "list-runs", "etl", "-s", "2026-01-02T00:00:01", "--json") == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [etl_runs[2].run_id]
    argv = ("backfill", "create", "--dag-id", "list", "--from-date", "2026-01-02")
    assert cli(*argv, "--to-date", "2026-01-02", "--no-wait") == 0
    manual = store.trigger_run("list", clock.now(), logical_date=DAY[0])
    capsys.readouterr()
    assert cli("dags", "list-runs", "list", "--no-backfill", "--json") == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [manual.run_id]
    assert cli("dags", "list-runs", "list", "--json") == 0
    assert len(json.loads(capsys.readouterr().out)) == 2
    assert cli("dags", "list-runs", "etl", "-e", "2026-01-40") == 2
    assert "argument -e/--end-date: '2026-01-40' is not a date" in _one_error_line(capsys)


def test_dags_state_prints_the_runs_state_alone(cli, etl_runs, capsys):
    capsys.readouterr()
    assert cli("dags", "state", "etl", "2026-01-02") == 0
    assert capsys.readouterr().out == "failed\n"
    assert cli("dags", "state", "etl", "2026-01-03T00:00:00+00:00", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {
        "dag_id": "etl", "run_id": etl_runs[2].run_id, "state": "success"
    }  # fmt: skip
    assert cli("dags", "state", "etl", "2026-01-04") == 1
    assert "DAG 'etl' has no run at 2026-01-04T00:00:00+00:00" in _one_error_line(capsys)
    assert cli("dags", "state", "etl", "2026-02-30") == 2
    line = _one_error_line(capsys)
    assert "orchestrator: error: LOGICAL_DATE: '2026-02-30' is not a date or datetime" in line


def test_dags_next_execution_of_a_dag_named_create(cli, capsys, store, settings, clock):
    capsys.readouterr()
    assert cli("dags", "next-execution", "create", "-n", "3") == 0
    captured = capsys.readouterr()
    assert cli("schedule", "preview", "create", "--count", "3", "--json") == 0
    preview = json.loads(capsys.readouterr().out)["fire_times"]
    assert captured.out.splitlines() == [t["utc"] for t in preview]  # the scheduler not yet
    assert captured.err == "DAG create is paused: no run is created until it is unpaused\n"
    store.set_paused("create", False, clock.now())
    harness = Harness(store, settings, clock)  # the scheduler stores its next fire time
    try:
        harness.tick()
    finally:
        harness.close()
    assert store.get_dag("create").next_logical_date == DAY[1]  # the clock's 2026-01-01
    assert cli("dags", "next-execution", "create", "-n", "2") == 0
    assert capsys.readouterr().out == "2026-01-02T00:00:00+00:00\n2026-01-03T00:00:00+00:00\n"
    assert cli("dags", "next-execution", "etl") == 0  # manual only
    assert capsys.readouterr().out == "None\n"
    assert cli("dags", "next-execution", "nope") == 1
    assert "no DAG with dag_id 'nope'" in _one_error_line(capsys)


def test_dags_trigger_takes_airflows_short_flags(cli, store, capsys):
    capsys.readouterr()
    argv = ("dags", "trigger", "etl", "-c", '{"any": "key"}', "-l", "2026-03-01", "--json")
    assert cli(*argv) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["conf"] == {"any": "key"} and run["logical_date"].startswith("2026-03-01T00:00")


# -- tasks list, tasks test ------------------------------------------------------------


def test_tasks_list_of_a_dag_prints_its_task_ids_and_of_a_run_its_instances(cli, etl_runs, capsys):
    capsys.readouterr()
    assert cli("tasks", "list", "etl") == 0
    assert capsys.readouterr().out == "extract\nload\nreport\n"
    assert cli("tasks", "list", "list") == 0  # a DAG named like the sub-verb
    assert capsys.readouterr().out == "only\n"
    assert cli("tasks", "list", "etl", "--json") == 0
    assert [t["task_id"] for t in json.loads(capsys.readouterr().out)] == [
        "extract", "load", "report"
    ]  # fmt: skip
    assert cli("tasks", "list", etl_runs[1].run_id, "--json") == 0
    tis = json.loads(capsys.readouterr().out)
    assert [(t["task_id"], t["state"]) for t in tis] == [
        ("extract", "success"), ("load", "failed"), ("report", "upstream_failed")
    ]  # fmt: skip
    assert cli("tasks", "list", "nope") == 1
    line = _one_error_line(capsys)
    assert "no run with run_id 'nope' and no DAG with dag_id 'nope'" in line


def test_tasks_list_of_a_name_that_is_both_a_run_and_a_dag_is_refused(
    cli, write_dag, store, clock, capsys
):
    run = store.trigger_run("list", clock.now(), logical_date=DAY[0])
    write_dag("twin.py", f"""
from orchestrator import DAG
with DAG({run.run_id!r}, schedule=None) as twin:
    twin.shell("t", "true")
""")  # fmt: skip
    assert cli("dags", "parse") == 1  # broken.py
    capsys.readouterr()
    assert cli("tasks", "list", run.run_id) == 1
    line = _one_error_line(capsys)
    assert f"{run.run_id!r} is both a run and a DAG: see 'orchestrator runs show " in line


def test_tasks_test_and_dags_test_take_a_positional_logical_date(cli, capsys, store):
    capsys.readouterr()
    assert cli("tasks", "test", "etl", "extract", "2026-05-04") == 0
    assert capsys.readouterr().out.strip().endswith('"2026-05-04T00:00:00+00:00"')
    argv = ("tasks", "test", "etl", "extract", "2026-05-04", "--logical-date", "2026-05-05")
    assert cli(*argv) == 2
    assert "give the logical date once" in _one_error_line(capsys)
    assert cli("tasks", "test", "etl", "extract", "someday") == 2
    assert "'someday' is not an ISO date" in _one_error_line(capsys)
    assert cli("tasks", "test", "etl", "extract", "2026-05-04", "--logical-date", "x") == 2
    assert "give the logical date once" in _one_error_line(capsys)
    assert cli("dags", "test", "etl", "2026-05-04", "-c", '{"fail": true}') == 1
    out = capsys.readouterr().out
    assert "run etl__manual__20260504T000000Z" in out and "boom" in out
    assert store.list_runs() == []


# -- tasks clear DAG -t ... across runs --------------------------------------------------


def test_tasks_test_takes_a_run_id_where_airflow_3_does(cli, etl_runs, capsys):
    """``tasks test DAG TASK RUN_ID``: the run's logical date, conf and upstream results."""
    capsys.readouterr()
    assert cli("tasks", "test", "etl", "load", etl_runs[1].run_id) == 1  # its conf fails it
    assert cli("tasks", "test", "etl", "load", etl_runs[0].run_id) == 0
    assert capsys.readouterr().out.strip().endswith("2")
    argv = ("tasks", "test", "etl", "load", etl_runs[0].run_id, "--from-run", etl_runs[0].run_id)
    assert cli(*argv) == 2
    assert "give the run once" in _one_error_line(capsys)
    assert cli("tasks", "test", "etl", "load", "etl__manual__20990101T000000Z") == 2
    assert "etl__manual__20990101T000000Z" in _one_error_line(capsys)


def test_tasks_clear_across_runs_by_regex_and_date_range(cli, etl_runs, store, capsys):
    capsys.readouterr()
    argv = ("tasks", "clear", "etl", "-t", "^load$", "-s", "2026-01-02", "-e", "2026-01-03")
    assert cli(*argv, "-y") == 0
    out = capsys.readouterr().out
    assert f"{etl_runs[1].run_id}: cleared load" in out
    assert f"{etl_runs[2].run_id}: cleared load" in out
    assert _states(store, etl_runs[0]) == dict.fromkeys(("extract", "load", "report"), "success")
    assert _states(store, etl_runs[1])["load"] == "scheduled"
    assert _states(store, etl_runs[1])["report"] == "upstream_failed"  # not downstream
    assert _states(store, etl_runs[2]) == {
        "extract": "success", "load": "scheduled", "report": "success"
    }  # fmt: skip
    assert store.get_run(etl_runs[0].run_id).state == "success"


def test_tasks_clear_downstream_upstream_and_only_failed(cli, etl_runs, store, capsys):
    capsys.readouterr()
    assert cli("tasks", "clear", "etl", "--only-failed", "-y", "--json") == 0
    assert json.loads(capsys.readouterr().out) == [
        {"run_id": etl_runs[1].run_id, "cleared": ["load", "report"]}
    ]
    assert _states(store, etl_runs[1]) == {
        "extract": "success", "load": "scheduled", "report": "scheduled"
    }  # fmt: skip
    assert _states(store, etl_runs[0])["load"] == "success"
    assert cli("tasks", "clear", "etl", "-t", "report", "-u", "-e", "2026-01-01", "-y") == 0
    assert _states(store, etl_runs[0]) == dict.fromkeys(("extract", "load", "report"), "scheduled")
    assert _states(store, etl_runs[2])["extract"] == "success"
    capsys.readouterr()
    assert cli("tasks", "clear", "etl", "-t", "extract", "-d", "-s", "2026-01-03", "-y") == 0
    assert _states(store, etl_runs[2]) == dict.fromkeys(("extract", "load", "report"), "scheduled")
    assert "cleared extract, load, report" in capsys.readouterr().out


class Terminal(io.StringIO):
    """Standard input that is a terminal, with the user's answer typed in advance."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "cleared"), [("y\n", True), ("yes\n", True),
                                                  ("n\n", False), ("\n", False), ("", False)])  # fmt: skip
def test_tasks_clear_lists_what_it_clears_and_asks(
    cli, etl_runs, store, capsys, monkeypatch, answer, cleared
):
    monkeypatch.setattr("sys.stdin", Terminal(answer))
    capsys.readouterr()
    assert cli("tasks", "clear", "etl", "-t", "load", "-d", "-s", "2026-01-02") == 0
    out = capsys.readouterr().out
    listing = out.splitlines()
    assert listing[0].split() == ["run_id", "logical_date", "task_id", "map_index", "state"]
    rows = [line.split() for line in listing[1:5]]
    assert [(r[0], r[2], r[4]) for r in rows] == [
        (etl_runs[1].run_id, "load", "failed"), (etl_runs[1].run_id, "report", "upstream_failed"),
        (etl_runs[2].run_id, "load", "success"), (etl_runs[2].run_id, "report", "success"),
    ]  # fmt: skip
    assert "Clear these 4 task instance(s)? [y/N] " in out
    if cleared:
        assert _states(store, etl_runs[2])["report"] == "scheduled"
    else:
        assert "cancelled: nothing was cleared" in out
        assert _states(store, etl_runs[2])["report"] == "success"
        assert _states(store, etl_runs[1])["load"] == "failed"


def test_tasks_clear_asks_on_a_real_terminal(etl_runs, store, settings):
    """The command in its own process, its standard input a pseudo-terminal: it waits
    for the answer typed there, then clears."""
    main_fd, terminal_fd = pty.openpty()
    env = {**os.environ, "ORCHESTRATOR_DATABASE_URL": settings.database_url,
           "ORCHESTRATOR_DAGS_FOLDER": settings.dags_folder,
           "ORCHESTRATOR_STATE_DIR": settings.state_dir}  # fmt: skip
    argv = [sys.executable, "-m", "orchestrator", "tasks", "clear", "etl", "-t", "^load$"]
    with subprocess.Popen(
        [*argv, "-s", "2026-01-02", "-e", "2026-01-02"], stdin=terminal_fd,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    ) as proc:  # fmt: skip
        os.close(terminal_fd)
        os.write(main_fd, b"y\n")  # typed ahead: the terminal holds the line until read
        out, err = proc.communicate(timeout=60)
    os.close(main_fd)
    assert proc.returncode == 0, err
    assert "Clear these 1 task instance(s)? [y/N] " in out
    assert f"{etl_runs[1].run_id}: cleared load" in out
    assert [_states(store, r)["load"] for r in etl_runs] == ["success", "scheduled", "success"]


def test_tasks_clear_without_a_terminal_and_without_yes_refuses(
    cli, etl_runs, store, capsys, monkeypatch
):
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # piped: not a terminal
    capsys.readouterr()
    assert cli("tasks", "clear", "etl", "-t", "load") == 2
    captured = capsys.readouterr()
    assert captured.out.count("load") == 3  # the listing, one line a run
    assert "3 task instance(s) would be cleared, and there is no terminal to confirm on: " \
        "pass -y/--yes" in captured.err  # fmt: skip
    assert [_states(store, r)["load"] for r in etl_runs] == ["success", "failed", "success"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("etl", "-t", "[load"), "argument -t/--task-regex: '[load' is not a valid regular "
                                 "expression: unterminated character set at position 0"),
        (("etl", "-t", "^nothing$"), "-t/--task-regex '^nothing$' matches no task of DAG 'etl' "
                                     "(tasks: extract, load, report)"),
        (("etl", "-s", "yesterday"), "argument -s/--start-date: 'yesterday' is not a date"),
        (("etl", "-e", "2026-01-32"), "argument -e/--end-date: '2026-01-32' is not a date"),
        (("etl", "-s", "2026-01-03", "-e", "2026-01-02"), "-e/--end-date 2026-01-02 is before"),
        (("etl", "--map-index", "1", "-y"), "--map-index belongs to 'tasks clear RUN TASK"),
        (("etl__manual__20260101T000000Z", "load", "-t", "x"),
         "-t/--task-regex belongs to the DAG form 'tasks clear DAG -t ...'"),
        (("etl__manual__20260101T000000Z", "load", "-y"), "-y/--yes belongs to the DAG form"),
    ],
)  # fmt: skip
def test_tasks_clear_bad_input_exits_2_naming_it_and_clears_nothing(
    cli, etl_runs, store, capsys, argv, message
):
    capsys.readouterr()
    assert cli("tasks", "clear", *argv) == 2
    assert message in _one_error_line(capsys)
    assert [_states(store, r)["load"] for r in etl_runs] == ["success", "failed", "success"]


SETUP_TEARDOWN = """
from orchestrator import DAG, setup, task, teardown

with DAG("scratch", schedule=None) as dag:
    @setup
    def create(ctx):
        return "schema-1"

    @task
    def work(ctx):
        if ctx.conf.get("fail"):
            raise ValueError("boom")

    @teardown
    def drop(ctx):
        return "dropped"

    create >> work >> drop
    create >> drop
"""


def test_tasks_clear_only_failed_lists_the_setup_and_teardown_it_takes_along(
    cli, write_dag, store, settings, clock, capsys, monkeypatch
):
    write_dag("scratch.py", SETUP_TEARDOWN)
    assert cli("dags", "parse") == 1  # broken.py
    harness = Harness(store, settings, clock)
    try:
        run = store.trigger_run("scratch", clock.now(), conf={"fail": True}, logical_date=DAY[0])
        assert harness.run_until_finished(run.run_id).state == "failed"
    finally:
        harness.close()
    assert _states(store, run) == {"create": "success", "work": "failed", "drop": "success"}
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    capsys.readouterr()
    assert cli("tasks", "clear", "scratch", "-f") == 0
    out = capsys.readouterr().out
    assert [line.split()[2] for line in out.splitlines()[1:4]] == ["create", "work", "drop"]
    assert "Clear these 3 task instance(s)?" in out
    assert _states(store, run) == dict.fromkeys(("create", "work", "drop"), "scheduled")


def test_tasks_clear_of_a_dag_named_list_and_unknown_dag(cli, store, clock, capsys):
    run = store.trigger_run("list", clock.now(), logical_date=DAY[0])
    store.cancel_run(run.run_id, clock.now())
    capsys.readouterr()
    assert cli("tasks", "clear", "list", "-y") == 0
    assert f"{run.run_id}: cleared only" in capsys.readouterr().out
    assert cli("tasks", "clear", "nope", "-y") == 1
    assert "no DAG with dag_id 'nope'" in _one_error_line(capsys)


# -- backfill create -------------------------------------------------------------------


def test_backfill_create_is_backfill_dag_start_end(cli, store, capsys):
    capsys.readouterr()
    argv = ["backfill", "create", "--dag-id", "list", "--from-date", "2026-01-02"]
    assert cli(*argv, "--to-date", "2026-01-03", "--run-backwards", "--no-wait") == 0
    assert "2 run(s) created" in capsys.readouterr().out
    runs = store.list_runs("list")
    assert [(r.logical_date, r.run_type) for r in runs] == [
        (DAY[2], "backfill"),
        (DAY[1], "backfill"),
    ]
    [record] = store.list_backfills()
    assert record.dag_id == "list" and record.reverse
    # a DAG named 'create' in our own form; 'list' with --start/--end is a DAG too
    assert cli("backfill", "create", "--start", "2026-01-01", "--end", "2026-01-01",
               "--no-wait") == 0  # fmt: skip
    assert [r.logical_date for r in store.list_runs("create")] == [DAY[0]]
    assert cli("backfill", "list", "--start", "2026-01-01", "--end", "2026-01-01",
               "--no-wait") == 0  # fmt: skip
    assert len(store.list_runs("list")) == 3
    capsys.readouterr()
    assert cli("backfill", "list", "--json") == 0  # the action still lists
    assert sorted(b["dag_id"] for b in json.loads(capsys.readouterr().out)) == [
        "create", "list", "list"
    ]  # fmt: skip


@pytest.mark.parametrize(("behavior", "cleared"), [("none", 0), ("failed", 1), ("completed", 3)])
def test_backfill_create_reprocess_behavior(cli, store, settings, clock, capsys, behavior, cleared):
    argv = ["backfill", "create", "--dag-id", "create", "--from-date", "2026-01-01"]
    argv += ["--to-date", "2026-01-03", "--no-wait"]
    assert cli(*argv) == 0
    runs = sorted(store.list_runs("create"), key=lambda r: r.logical_date)
    store.cancel_run(runs[0].run_id, clock.now())  # finished, not successful
    store.set_paused("create", False, clock.now())
    harness = Harness(store, settings, clock)
    try:
        for run in runs[1:]:
            assert harness.run_until_finished(run.run_id).state == "success"
    finally:
        harness.close()
    capsys.readouterr()
    assert cli(*argv, "--reprocess-behavior", behavior) == 0
    assert f"{cleared} cleared" in capsys.readouterr().out
    assert len(store.list_runs("create")) == 3
    assert cli(*argv, "--reprocess-behavior", "sometimes") == 2
    assert "invalid choice: 'sometimes'" in _one_error_line(capsys)


def test_backfill_create_without_dag_id_points_at_airflows_form(cli, store, capsys):
    capsys.readouterr()
    assert cli("backfill", "create") == 1  # the DAG 'create', without --start/--end
    assert "--start and --end are both required (Airflow's form: backfill create --dag-id " \
        "DAG --from-date A --to-date B)" in _one_error_line(capsys)  # fmt: skip
    assert store.list_runs() == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("create", "--dag-id", "list", "--from-date", "2026-01-01"), "needs --to-date"),
        (("create", "--dag-id", "list", "--start", "2026-01-01", "--to-date", "2026-01-02"),
         "'backfill create' takes --from-date, not --start"),
        (("list", "--from-date", "2026-01-01", "--to-date", "2026-01-02"),
         "--from-date belongs to 'backfill create --dag-id DAG ...'; with 'backfill DAG' "
         "write --start"),
        (("status", "--dag-id", "list"), "--dag-id belongs to 'backfill create --dag-id DAG"),
        (("create", "--dag-id", "list", "--from-date", "soon", "--to-date", "2026-01-02"),
         "argument --from-date: 'soon' is not a date or datetime"),
        (("create", "--dag-id", "list", "--from-date", "2026-01-01", "--to-date", "2026-01-02",
          "--reset"), "takes --reprocess-behavior, not --rerun-failed/--reset"),
    ],
)  # fmt: skip
def test_backfill_create_bad_input_exits_2_and_creates_nothing(cli, store, capsys, argv, message):
    capsys.readouterr()
    assert cli("backfill", *argv) == 2
    assert message in _one_error_line(capsys)
    assert store.list_runs() == [] and store.list_backfills() == []


@pytest.mark.parametrize("name", ["list", "status", "cancel", "create"])
def test_a_dag_named_like_a_sub_verb_is_never_misread(cli, store, capsys, name):
    capsys.readouterr()
    assert cli("backfill", name, "--start", "2026-01-01", "--end", "2026-01-01", "--no-wait") == 0
    argv = ("backfill", "create", "--dag-id", name, "--from-date", "2026-01-02")
    assert cli(*argv, "--to-date", "2026-01-02", "--no-wait") == 0
    assert [r.logical_date for r in store.list_runs(name)] == [DAY[1], DAY[0]]
    assert {r.dag_id for r in store.list_runs()} == {name}
    capsys.readouterr()
    assert cli("dags", "state", name, "2026-01-01") == 0
    assert capsys.readouterr().out == "queued\n"  # paused: its runs wait
    assert cli("dags", "list-runs", name, "--json") == 0
    assert [r["dag_id"] for r in json.loads(capsys.readouterr().out)] == [name, name]
    assert cli("tasks", "list", name) == 0
    assert capsys.readouterr().out == "only\n"
    assert cli("tasks", "clear", name, "-y") == 0  # nothing finished yet
    assert "nothing to clear" in capsys.readouterr().out
    assert cli("backfill", "list", name, "--json") == 0  # the action, for that DAG
    assert [b["dag_id"] for b in json.loads(capsys.readouterr().out)] == [name, name]


# -- did you mean --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("dag", "list"), "orchestrator: error: argument COMMAND: invalid choice: 'dag' "
                          "(did you mean 'dags'?)"),
        (("dags", "list-run", "etl"), "orchestrator dags: error: argument action: invalid "
                                      "choice: 'list-run' (did you mean 'list-runs'?)"),
        (("dags", "trigger", "etl", "--confg", "{}"), "orchestrator dags trigger: error: "
         "unrecognized arguments: --confg {} (did you mean '--conf'?)"),
        (("tasks", "clear", "etl", "--only-faild"), "(did you mean '--only-failed'?)"),
        (("dags", "backfill", "etl"), "(did you mean 'orchestrator backfill create --dag-id"),
        (("db", "migrate"), "(did you mean 'orchestrator db upgrade'?)"),
        (("dags", "trigger", "etl", "--zzzz"), "unrecognized arguments: --zzzz (see "),
    ],
)  # fmt: skip
def test_an_unknown_command_or_flag_suggests_the_closest(cli, capsys, argv, message):
    capsys.readouterr()
    assert cli(*argv) == 2
    assert message in _one_error_line(capsys)


def test_every_alias_says_in_help_which_command_it_stands_for(cli, capsys):
    capsys.readouterr()
    assert cli("dags", "--help") == 0
    out = " ".join(capsys.readouterr().out.split())
    for text in ("list-runs Airflow's name for 'runs list DAG'",
                 "list-import-errors Airflow's name for 'dags errors'",
                 "next-execution the DAG's next fire time(s) (Airflow's name for 'schedule "
                 "preview DAG')", "state the state of DAG's run at LOGICAL_DATE"):  # fmt: skip
        assert text in out
    assert cli("backfill", "--help") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "backfill create --dag-id DAG --from-date A --to-date B (an alias of 'backfill " \
        "DAG --start A --end B')" in out  # fmt: skip
    assert cli("tasks", "clear", "--help") == 0
    assert "Airflow's form: tasks clear DAG [-t REGEX]" in capsys.readouterr().out
