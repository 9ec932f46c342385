"""The state folder is the orchestrator user's alone (issue 24, item 10), through real
processes: after a real `orchestrator standalone` ran a Python and a shell try every
folder in it is 0700 and every file has no group or other bits; an existing folder
left 0755/0644 is tightened by `db upgrade` with a warning. On main the database,
logs and folders came out 0644/0755."""

from __future__ import annotations

import json
import os
import stat
import textwrap
import time
from pathlib import Path

import pytest

from tests.system.cluster import cli, free_port, standalone

DAG = """
from orchestrator import DAG, task

with DAG("modes", schedule=None) as dag:
    @task
    def py(ctx):
        print("hello from python")

    py >> dag.shell("sh", "echo hello from shell; umask")
"""


def _open_entries(root: Path) -> list[str]:
    found = []
    for path in [root, *root.rglob("*")]:
        info = os.lstat(path)
        if not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
            found.append(f"{path.relative_to(root)} {oct(stat.S_IMODE(info.st_mode))}")
    return found


@pytest.mark.system
def test_standalone_leaves_nothing_readable_by_others(tmp_path: Path) -> None:
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "modes.py").write_text(textwrap.dedent(DAG))
    state = tmp_path / ".orchestrator"
    with standalone(tmp_path, ORCHESTRATOR_WEB_PORT=str(free_port())) as proc:
        deadline = time.monotonic() + 90
        while "modes" not in cli(tmp_path, "dags", "list").stdout:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.5)
        assert cli(tmp_path, "dags", "trigger", "modes").returncode == 0
        run = None
        while run is None or run["state"] not in ("success", "failed"):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.5)
            runs = json.loads(cli(tmp_path, "runs", "list", "modes", "--json").stdout or "[]")
            run = runs[0] if runs else None
        assert run["state"] == "success", (tmp_path / "standalone.log").read_text()[-3000:]
        shell_log = cli(tmp_path, "tasks", "logs", run["run_id"], "sh").stdout
        assert list(state.rglob("*.log")), "the tries wrote their logs"
        assert _open_entries(state) == []
        assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
        for name in ("orchestrator.db", "secrets_key", "webui_secret"):
            assert stat.S_IMODE(os.stat(state / name).st_mode) == 0o600, name
    assert "hello from shell" in shell_log
    assert "\n0022" in shell_log  # a task gets the usual umask back, not 077
    assert "readable by other users" not in (tmp_path / "standalone.log").read_text()


@pytest.mark.system
def test_db_upgrade_tightens_an_open_state_folder_with_a_warning(tmp_path: Path) -> None:
    state = tmp_path / ".orchestrator"
    (state / "logs" / "etl").mkdir(parents=True)
    (state / "logs" / "etl" / "1.log").write_text("a log\n")
    (state / "conf.json").write_text("{}")
    for folder in (state, state / "logs", state / "logs" / "etl"):
        folder.chmod(0o755)
    for name in ("logs/etl/1.log", "conf.json"):
        (state / name).chmod(0o644)
    env_umask = os.umask(0o022)
    try:
        out = cli(tmp_path, "db", "upgrade")
    finally:
        os.umask(env_umask)
    assert out.returncode == 0, out.stderr
    assert "entries were readable by other users" in out.stderr
    assert "conf.json" in out.stderr
    assert _open_entries(state) == []
    assert (state / "logs" / "etl" / "1.log").read_text() == "a log\n"
    again = cli(tmp_path, "db", "upgrade")
    assert again.returncode == 0 and "readable by other users" not in again.stderr
