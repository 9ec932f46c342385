"""Credentials through a real `orchestrator standalone` (issue 16): the key file made
once with mode 600, a connection and a variable added with the CLI while it runs, read
by tries in real task processes through the worker, and no secret in the logs or in
the database file; the worker's ORCHESTRATOR_VAR_ reaches lookups, not tasks."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from tests.system.cluster import cli, free_port, standalone

PASSWORD = "sy5tem-pa55word"

DAG = """
import os
from orchestrator import DAG, task

with DAG("creds", schedule=None) as dag:
    @task
    def py(ctx):
        print("env", os.environ.get("ORCHESTRATOR_VAR_REGION"), "var", ctx.variable("region"))
        print("pw", ctx.connection("warehouse").password)

    dag.shell("sh", "echo pw={{ conn.warehouse.password }} region={{ var.value.region }}")
"""


def _wait(predicate, what: str, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.system
def test_standalone_tries_read_credentials_and_leave_no_secret_behind(tmp_path: Path) -> None:
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "creds.py").write_text(textwrap.dedent(DAG))
    env = {"ORCHESTRATOR_WEB_PORT": str(free_port()), "ORCHESTRATOR_VAR_REGION": "apac"}
    with standalone(tmp_path, **env) as proc:
        _wait(lambda: "creds" in cli(tmp_path, "dags", "list").stdout, "the DAG to be parsed")
        key = tmp_path / ".orchestrator" / "secrets_key"
        assert oct(os.stat(key).st_mode & 0o777) == "0o600"
        uri = f"postgresql://etl:{PASSWORD}@db.internal:5432/sales"
        assert cli(tmp_path, "connections", "add", "warehouse", "--uri", uri).returncode == 0
        out = cli(tmp_path, "dags", "trigger", "creds", "--json")
        assert out.returncode == 0, out.stderr

        def finished():
            runs = json.loads(cli(tmp_path, "runs", "list", "creds", "--json").stdout or "[]")
            return runs and runs[0]["state"] in ("success", "failed") and runs[0]

        run = _wait(finished, "the run to finish")
        assert proc.poll() is None
        assert run["state"] == "success", (tmp_path / "standalone.log").read_text()[-3000:]
        py = cli(tmp_path, "tasks", "logs", run["run_id"], "py").stdout
        sh = cli(tmp_path, "tasks", "logs", run["run_id"], "sh").stdout
    assert "env None var apac" in py  # the worker's ORCHESTRATOR_VAR_ is read, not inherited
    assert "pw ***" in py and "pw=*** region=apac" in sh
    logs = "".join(p.read_text() for p in (tmp_path / ".orchestrator" / "logs").rglob("*.log"))
    assert PASSWORD not in logs + py + sh
    for path in (tmp_path / ".orchestrator").glob("orchestrator.db*"):
        assert PASSWORD.encode() not in path.read_bytes(), path
