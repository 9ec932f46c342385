"""No process under the orchestrator holds its secrets in /proc/<pid>/environ (issue
24, item 2), with real processes: every descendant of `standalone`, and of a
scheduler, a worker, a triggerer and a webserver run apart, found by walking /proc
(not a list of known helpers), while a try runs. On main multiprocessing's resource
tracker (a new program: its environ is the one it was started with, never wiped) held
ORCHESTRATOR_SECRETS_KEY, ORCHESTRATOR_DATABASE_URL and ORCHESTRATOR_METRICS_TOKEN."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from tests.system.cluster import free_port

DAG = """
import time
from orchestrator import DAG, task

with DAG("slow", schedule=None) as dag:
    @task
    def nap(ctx):
        time.sleep(4)

    nap >> dag.shell("sh", "sleep 2")
"""


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        here = todo.pop()
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{here}/task"):
                with open(f"/proc/{here}/task/{tid}/children") as f:
                    for child in f.read().split():
                        if int(child) not in found:
                            found.add(int(child))
                            todo.append(int(child))
    return found


def holders(pids: set[int], secrets: dict[str, str]) -> dict[str, list[str]]:
    """{process: [the secret names its /proc/<pid>/environ holds]} (only the holders)."""
    out: dict[str, list[str]] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                block = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:120]
        except OSError:
            continue  # ended meanwhile
        held = [name for name, value in secrets.items() if value.encode() in block]
        if held:
            out[f"{pid} {cmd}"] = held
    return out


def _cli(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@contextlib.contextmanager
def started(cwd: Path, env: dict[str, str], *argv: str, **popen: Any) -> Iterator[subprocess.Popen]:
    name = argv[0]
    with open(cwd / f"{name}.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *argv],
            cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, **popen,
        )  # fmt: skip
        try:
            yield proc
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _setup(tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "slow.py").write_text(textwrap.dedent(DAG))
    secrets = {
        "ORCHESTRATOR_SECRETS_KEY": Fernet.generate_key().decode(),
        "ORCHESTRATOR_METRICS_TOKEN": "metrics-token-5ecr3t-" + os.urandom(6).hex(),
        "ORCHESTRATOR_DATABASE_URL": f"sqlite:///{tmp_path}/db-{os.urandom(6).hex()}.db",
    }
    env = dict(os.environ, **secrets, ORCHESTRATOR_WEB_PORT=str(free_port()))
    env["ORCHESTRATOR_PARSE_INTERVAL"] = "1"
    return env, secrets


def _watch_a_run(tmp_path: Path, env: dict[str, str], procs: list, secrets: dict[str, str]):
    """Trigger the slow DAG and walk every descendant of ``procs`` until it finished;
    returns (the processes seen, the holders found, the run)."""
    deadline = time.monotonic() + 120
    while "slow" not in _cli(tmp_path, env, "dags", "list").stdout:
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.5)
    assert _cli(tmp_path, env, "dags", "trigger", "slow").returncode == 0
    seen: dict[int, str] = {}
    found: dict[str, list[str]] = {}
    run = None
    while run is None or run["state"] not in ("success", "failed"):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        pids = {p.pid for p in procs}
        for p in procs:
            pids |= descendants(p.pid)
        for pid in pids:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
                seen.setdefault(pid, f.read().replace(b"\0", b" ").decode(errors="replace"))
        found.update(holders(pids, secrets))
        runs = json.loads(_cli(tmp_path, env, "runs", "list", "slow", "--json").stdout or "[]")
        run = runs[0] if runs else None
        time.sleep(0.3)
    return seen, found, run


@pytest.mark.system
def test_no_descendant_of_standalone_holds_a_secret_in_its_environ(tmp_path: Path) -> None:
    env, secrets = _setup(tmp_path)
    with started(tmp_path, env, "standalone") as proc:
        seen, found, run = _watch_a_run(tmp_path, env, [proc], secrets)
    assert run["state"] == "success", (tmp_path / "standalone.log").read_text()[-3000:]
    commands = list(seen.values())
    assert any("resource_tracker" in c for c in commands), commands
    assert any("forkserver" in c for c in commands), commands
    assert len(seen) >= 4  # standalone, the tracker, the forkserver, task processes
    assert found == {}


@pytest.mark.system
def test_no_descendant_of_the_separate_processes_holds_a_secret(tmp_path: Path) -> None:
    env, secrets = _setup(tmp_path)
    assert _cli(tmp_path, env, "db", "upgrade").returncode == 0
    with (
        started(tmp_path, env, "scheduler") as scheduler,
        started(tmp_path, env, "worker") as worker,
        started(tmp_path, env, "triggerer") as triggerer,
        started(tmp_path, env, "webserver") as webserver,
    ):
        procs = [scheduler, worker, triggerer, webserver]
        seen, found, run = _watch_a_run(tmp_path, env, procs, secrets)
    assert run["state"] == "success", (tmp_path / "worker.log").read_text()[-3000:]
    assert sum("resource_tracker" in c for c in seen.values()) >= 2, list(seen.values())
    assert found == {}
