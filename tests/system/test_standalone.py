"""`orchestrator standalone` as a new user runs it: real process, example DAGs, UI."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from pathlib import Path

import pytest

from tests.system.cluster import cli, free_port, standalone

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("nightly_report", "heartbeat_check", "fan_out", "flaky", "http_notify")
EXAMPLES += ("ingest_sales", "sales_report")  # issue 15: an asset producer and its consumer


@pytest.mark.system
def test_standalone_runs_the_example_dags_and_serves_the_ui(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "dags", tmp_path / "dags")
    port = free_port()
    # http_notify calls standalone's own /health; its DAG file reads HTTP_NOTIFY_URL, a
    # variable tasks and DAG files inherit only when the settings allow it
    with standalone(
        tmp_path,
        ORCHESTRATOR_WEB_PORT=str(port),
        ORCHESTRATOR_TASK_ENV_EXTRA="HTTP_NOTIFY_URL",
        HTTP_NOTIFY_URL=f"http://127.0.0.1:{port}/health",
    ) as proc:
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
        # the flaky task failed once and succeeded on its retry (in a run that finished:
        # flaky fires every 2 minutes, so the newest run may have only just started)
        listed = cli(
            tmp_path, "runs", "list", "flaky", "--state", "success", "--json", "--limit", "1"
        )
        [run] = json.loads(listed.stdout)
        tis = json.loads(cli(tmp_path, "tasks", "list", run["run_id"], "--json").stdout)
        call_api = next(t for t in tis if t["task_id"] == "call_api")
        assert call_api["try_number"] == 2

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            html = page.read().decode()
        for dag_id in EXAMPLES:
            assert dag_id in html
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as health:
            assert json.load(health)["status"] == "ok"


@pytest.mark.system
def test_a_hanging_dag_file_holds_back_neither_the_other_dags_nor_the_scheduler(
    tmp_path: Path,
) -> None:
    # the first scan used to run before the scheduler started and to store nothing until
    # every file was parsed: a healthy DAG beside this file got its run after
    # parse_timeout. The bound below is far below that timeout, never a measured time.
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "a_hangs.py").write_text("while True:\n    pass\n")
    (dags / "b_healthy.py").write_text(
        "from datetime import datetime\n"
        "from orchestrator import DAG\n"
        "with DAG('healthy', schedule='@hourly', start_date=datetime(2026, 1, 1)) as dag:\n"
        "    dag.shell('t', 'true')\n"
    )
    with standalone(
        tmp_path, ORCHESTRATOR_WEB_PORT=str(free_port()), ORCHESTRATOR_PARSE_TIMEOUT="120"
    ) as proc:
        runs: list = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not runs:
            assert proc.poll() is None, (tmp_path / "standalone.log").read_text()
            out = cli(tmp_path, "runs", "list", "healthy", "--json")
            if out.returncode == 0:
                runs = json.loads(out.stdout)
            time.sleep(0.5)
        assert runs, (tmp_path / "standalone.log").read_text()[-3000:]
        assert cli(tmp_path, "dags", "errors").stdout.count("a_hangs.py") == 0  # still parsing
