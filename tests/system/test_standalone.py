"""`orchestrator standalone` as a new user runs it: real process, example DAGs, UI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("nightly_report", "heartbeat_check", "fan_out", "flaky", "http_notify")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.system
def test_standalone_runs_the_example_dags_and_serves_the_ui(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "dags", tmp_path / "dags")
    port = free_port()
    # http_notify calls standalone's own /health
    env = dict(
        os.environ,
        ORCHESTRATOR_WEB_PORT=str(port),
        HTTP_NOTIFY_URL=f"http://127.0.0.1:{port}/health",
    )
    env.pop("ORCHESTRATOR_DATABASE_URL", None)
    log = open(tmp_path / "standalone.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "standalone"],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        succeeded: set[str] = set()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and succeeded != set(EXAMPLES):
            assert proc.poll() is None, (tmp_path / "standalone.log").read_text()
            out = cli(tmp_path, "runs", "list", "--state", "success", "--json", "--limit", "500")
            if out.returncode == 0:
                succeeded = {r["dag_id"] for r in json.loads(out.stdout)}
            time.sleep(0.5)
        assert succeeded == set(EXAMPLES), (tmp_path / "standalone.log").read_text()[-3000:]

        failed = cli(tmp_path, "runs", "list", "--state", "failed", "--json")
        assert json.loads(failed.stdout) == []
        # the flaky task failed once and succeeded on its retry
        [run] = json.loads(cli(tmp_path, "runs", "list", "flaky", "--json", "--limit", "1").stdout)
        tis = json.loads(cli(tmp_path, "tasks", "list", run["run_id"], "--json").stdout)
        call_api = next(t for t in tis if t["task_id"] == "call_api")
        assert call_api["try_number"] == 2

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            html = page.read().decode()
        for dag_id in EXAMPLES:
            assert dag_id in html
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as health:
            assert json.load(health)["status"] == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    assert proc.returncode == 0, (tmp_path / "standalone.log").read_text()[-3000:]
