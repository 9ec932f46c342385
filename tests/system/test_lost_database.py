"""The SQLite file deleted under a running `orchestrator standalone` (a real process).

It notices on its next scheduler tick, stops writing, says so loudly in its log and on
/health (503); a restart refuses to create a fresh empty database in its place (which
would run every completed task again) until told to with --new-database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.system.cluster import cli, free_port, wait_for

pytestmark = pytest.mark.system

DAG_FILE = """
from orchestrator import DAG, task

with DAG("quick", schedule=None) as dag:
    @task
    def a(ctx):
        return 1

    @task
    def b(ctx):
        return ctx.upstream("a")

    a >> b
"""


def health(port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)
    except OSError:
        return 0, {}


def start(tmp_path: Path, port: int, *extra: str, log_name: str) -> subprocess.Popen:
    env = dict(os.environ, ORCHESTRATOR_WEB_PORT=str(port))
    env.pop("ORCHESTRATOR_DATABASE_URL", None)
    with open(tmp_path / log_name, "w") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "standalone", *extra],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_deleted_database_is_noticed_and_never_silently_recreated(tmp_path: Path) -> None:
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "quick.py").write_text(DAG_FILE)
    db = tmp_path / ".orchestrator" / "orchestrator.db"
    port = free_port()
    proc = start(tmp_path, port, log_name="first.log")
    try:
        wait_for(lambda: health(port)[0] == 200, "standalone to be healthy", 60)
        out = cli(tmp_path, "dags", "trigger", "quick", "--json")
        assert out.returncode == 0, out.stderr
        run_id = json.loads(out.stdout)["run_id"]
        wait_for(
            lambda: run_id in cli(tmp_path, "runs", "list", "--state", "success", "--json").stdout,
            "the run to succeed",
            60,
        )

        db.unlink()
        status, body = wait_for(
            lambda: (h := health(port))[0] == 503 and h, "/health to notice the deletion", 20
        )
        assert body["checks"]["identity"]["ok"] is False, body
        log = lambda: (tmp_path / "first.log").read_text()  # noqa: E731
        wait_for(lambda: "was deleted while in use" in log(), "the loud log line", 20)
        assert "CRITICAL" in log() and "stops writing" in log()
        # a command refuses too, instead of creating an empty file and writing there
        out = cli(tmp_path, "dags", "trigger", "quick")
        assert out.returncode == 1 and "is missing, but" in out.stderr, out.stderr
        assert not db.exists()
        assert proc.poll() is None  # still up, saying what is wrong
    finally:
        stop(proc)

    again = start(tmp_path, port, log_name="second.log")
    try:
        assert again.wait(60) == 1
    finally:
        stop(again)
    second = (tmp_path / "second.log").read_text()
    assert "is missing, but" in second and "--new-database" in second, second
    assert not db.exists()  # nothing was created: the completed run is not run again

    fresh = start(tmp_path, port, "--new-database", log_name="third.log")
    try:
        wait_for(lambda: health(port)[0] == 200, "a new database on purpose", 60)
        assert db.exists()
    finally:
        stop(fresh)
    assert fresh.returncode == 0, (tmp_path / "third.log").read_text()[-3000:]
