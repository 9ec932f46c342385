"""Issue 13 (first contact), the CLI: global flags in both positions, usage errors
exit 2 on one line, no tracebacks, bounded sizes, quiet Alembic, who triggered a run."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import backfill, build_parser, main
from orchestrator.cli.common import cli_actor
from orchestrator.errors import ConfigError
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import upgrade
from orchestrator.store.runs.run_rows import make_run_id

ROOT = Path(__file__).resolve().parents[2]

DAGS = """
from datetime import datetime
from orchestrator import DAG, task

with DAG("hello", schedule=None) as dag:
    @task
    def say(ctx):
        return 1

with DAG("minutely", schedule="* * * * *", timezone="UTC",
         start_date=datetime(2000, 1, 1)) as minutely:
    @task
    def tick(ctx):
        return 1
"""


@pytest.fixture
def env(sqlite_url, tmp_path, monkeypatch, write_dag):
    """The environment names database A (sqlite_url); DAGs hello and minutely parsed."""
    settings = Settings.load({}, cwd=str(tmp_path), database_url=sqlite_url)
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    write_dag("first.py", DAGS)
    assert main(["dags", "parse"]) == 0
    return settings


def _subprocess(
    argv: list[str], cwd: Path, stdout: Any = subprocess.PIPE
) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv],
        cwd=cwd,
        env=environ | {"PYTHONPATH": str(ROOT)},
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# item 4: global flags before the command -------------------------------------------

GLOBALS = {
    "database_url": ("--database-url", "sqlite:////tmp/b.db"),
    "dags_folder": ("--dags-folder", "/tmp/dags-b"),
    "state_dir": ("--state-dir", "/tmp/state-b"),
    "lease_seconds": ("--lease-seconds", "41"),
    "heartbeat_seconds": ("--heartbeat-seconds", "4"),
    "log_level": ("--log-level", "DEBUG"),
    "log_format": ("--log-format", "json"),
}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, (*path, name))


def _required_args(parser: argparse.ArgumentParser) -> list[str]:
    argv = []
    for action in parser._actions:
        if not action.option_strings and action.nargs in (None, "+"):  # "+": dags port
            argv.append("1")
        elif action.option_strings and action.required:
            argv += [action.option_strings[0], "1d"]
    return argv


def test_every_global_flag_works_before_and_after_every_command():
    flags = [word for flag, value in GLOBALS.values() for word in (flag, value)]
    leaves = list(_leaves(build_parser()))
    assert len(leaves) > 30  # every command of every group
    for path, leaf in leaves:
        rest = [*path, *_required_args(leaf)]
        for argv in ([*flags, *rest], [*rest, *flags]):
            args = build_parser().parse_args(argv)
            got = {name: getattr(args, name) for name in GLOBALS}
            assert got == {name: value for name, (_flag, value) in GLOBALS.items()}, argv


def test_database_url_before_the_command_beats_the_environment(env, tmp_path, capsys):
    b_url = f"sqlite:///{tmp_path / 'b.db'}"
    upgrade(b_url)
    assert main(["dags", "parse", "--database-url", b_url]) == 0
    assert main(["dags", "trigger", "hello", "--json", "--database-url", b_url]) == 0
    run_id = json.loads(capsys.readouterr().out.split("\n", 1)[1])["run_id"]

    assert main(["--database-url", b_url, "runs", "list", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [run_id]
    assert main(["runs", "list", "--json"]) == 0  # the environment's database A
    assert json.loads(capsys.readouterr().out) == []
    # tasks clear finds the run in B (in A it does not exist)
    assert main(["--database-url", b_url, "tasks", "clear", run_id, "say"]) == 0
    assert "nothing to clear" in capsys.readouterr().out
    # db clean acts on the database named before the command, not on A
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    assert main(["--database-url", empty, "db", "clean", "--older-than", "1d"]) == 1
    line = _one_error_line(capsys)
    assert "no database at" in line and "empty.db" in line


# item 5: one-line errors, exit 2 for bad arguments, a closed pipe is quiet ------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("runs", "list", "--state", "bogus"), "argument --state: invalid choice: 'bogus'"),
        (("runs", "list", "--limit", "-1"), "argument --limit: must be between 1 and"),
        (("runs", "list", "--limit", "99999999999999999999"), "must be between 1 and"),
        (("tasks", "failed", "--limit", "0"), "argument --limit: must be between 1 and"),
        (("alerts", "list", "--limit", "x"), "expected a whole number, got 'x'"),
        (("pools", "set", "bad name", "3"), "pool names are 1-250 letters"),
        (("pools", "set", "ok", "99999999999999999999"), "argument SLOTS: must be between 0"),
        (("pools", "set", "ok", "-1"), "argument SLOTS: must be between 0"),
        (("db", "clean", "--older-than", "1d", "--batch", "0"), "--batch: must be between"),
        (("backfill", "minutely", "--max-active-runs", "0"), "--max-active-runs: must be"),
        (("--log-level", "loud", "runs", "list"), "argument --log-level: invalid choice"),
        (("schedule", "preview", "minutely", "--count", "99999999"), "between 1 and 10000"),
        (("db", "clean", "--older-than", "99999999999999d"), "a number is too large"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(env, capsys, argv, message):
    capsys.readouterr()
    assert main(list(argv)) == 2
    line = _one_error_line(capsys)
    assert line.startswith("orchestrator") and "error: " in line and message in line, line


def test_the_cli_and_the_store_check_pool_names_alike():
    from orchestrator.cli.common import POOL_NAME as cli_pattern
    from orchestrator.store.tasks.claims import POOL_NAME

    assert cli_pattern.pattern == POOL_NAME.pattern


def test_a_bad_pool_name_is_refused_by_the_store_too(env):
    store = Store(env.database_url)
    try:
        with pytest.raises(ConfigError, match="pool names are"):
            store.set_pool("two words", 3, datetime.now(UTC))
        with pytest.raises(ConfigError, match="slots must be"):
            store.set_pool("big", 2**40, datetime.now(UTC))
        assert store.pools() == []
    finally:
        store.dispose()


def test_a_run_id_of_year_one_has_four_digits(env, capsys):
    when = datetime(1, 1, 1, tzinfo=UTC)
    assert make_run_id("d", "manual", when) == "d__manual__00010101T000000Z"
    argv = ["dags", "trigger", "hello", "--logical-date", "0001-01-01T00:00+00:00", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == "hello__manual__00010101T000000Z"


def test_a_closed_pipe_exits_quietly(env, tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a byte
    try:
        proc = _subprocess(
            ["runs", "list", "--database-url", env.database_url], tmp_path, stdout=write_end
        )
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == 141


# item 2: Alembic's internals stay at DEBUG ------------------------------------------


def test_alembic_setup_lines_show_only_at_debug(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    info = _subprocess(["db", "upgrade", "--database-url", url, "--log-level", "INFO"], tmp_path)
    assert info.returncode == 0, info.stderr
    assert "setup plugin" not in info.stderr and "Context impl" not in info.stderr
    assert "migrated the schema from nothing to" in info.stderr
    url = f"sqlite:///{tmp_path / 'other.db'}"
    debug = _subprocess(["db", "upgrade", "--database-url", url, "--log-level", "DEBUG"], tmp_path)
    assert debug.returncode == 0 and "setup plugin" in debug.stderr


# item 6: bounded sizes --------------------------------------------------------------


def test_a_backfill_past_the_hard_maximum_is_refused_even_with_yes(env, capsys, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_BACKFILL_HARD_MAX_RUNS", "50")
    argv = ["backfill", "minutely", "--start", "2026-01-01T00:00", "--end", "2026-01-01T01:00"]
    assert main([*argv, "--yes", "--no-wait"]) == 1  # the range is refused, as without --yes
    assert "more than 50 fire times" in _one_error_line(capsys)
    assert main(["runs", "list", "minutely", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_big_backfill_shows_progress_while_it_creates_runs(env, capsys, monkeypatch):
    monkeypatch.setattr(backfill, "FIND_CHUNK", 500)  # fire times between progress lines
    argv = ["backfill", "minutely", "--start", "2026-01-01T00:00", "--end", "2026-01-02T01:00"]
    assert main([*argv, "--yes", "--no-wait"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "finding fire times: 500 so far",
        "finding fire times: 1000 so far",
        "finding fire times: 1500 so far",
        "creating runs: 1000/1501 fire times",
        "creating runs: 1501/1501 fire times",
    ]
    assert "1501 run(s) created" in captured.out
    store = Store(env.database_url)
    try:
        runs = store.list_runs("minutely", limit=2000)
        assert len(runs) == 1501 and {r.triggered_by for r in runs} == {cli_actor()}
        [event] = store.events(dag_id="minutely", kind="backfill_created")
        assert event.message.endswith(f"by {cli_actor()}")
    finally:
        store.dispose()


# item 7: who triggered a run ---------------------------------------------------------


def test_a_cli_trigger_records_who_on_the_run_and_in_the_event_log(env, capsys):
    assert main(["dags", "trigger", "hello", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["triggered_by"] == cli_actor()
    assert cli_actor().startswith("cli:") and cli_actor().endswith("@" + os.uname().nodename)
    assert main(["runs", "show", run["run_id"]]) == 0
    assert f"triggered_by         {cli_actor()}" in capsys.readouterr().out
    store = Store(env.database_url)
    try:
        [event] = store.events(run_id=run["run_id"], kind="run_created")
        assert event.message.endswith(f"created by {cli_actor()}")
    finally:
        store.dispose()
