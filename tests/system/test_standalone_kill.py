"""A real ``orchestrator standalone`` SIGKILLed mid-try, then restarted (issue 12, item 6).

The try in flight is lost to infrastructure: after the restart its lease expires, it
is recorded ``lost`` (reason ``lease_expired``) and retried without spending the
task's retries, so with the default ``retries=0`` the run still succeeds. The UI's
task page shows the lost try and /metrics counts it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from orchestrator.store import Store
from tests.system.cluster import wait_for
from tests.system.test_worker_kill import alive

pytestmark = pytest.mark.system

DAG_FILE = """
import os, time
from orchestrator import DAG, task

with DAG("victim", schedule=None) as dag:  # default_retries=0
    @task
    def long_task(ctx):
        if ctx.try_number == 1:
            with open({marker!r}, "w") as f:
                f.write(str(os.getpid()))
            time.sleep(120)
        return ctx.try_number
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as page:
        return page.read().decode()


def _serving(url: str) -> bool:
    try:
        _get(url)
    except urllib.error.HTTPError:  # it answers (whatever it thinks of its health)
        return True
    except OSError:  # not listening yet (URLError is an OSError)
        return False
    return True


def test_sigkilled_standalone_loses_the_try_and_the_restart_completes_the_run(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "marker.pid"
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "victim.py").write_text(
        textwrap.dedent(DAG_FILE.format(marker=str(marker)))
    )
    port = _free_port()
    env = dict(
        os.environ,
        ORCHESTRATOR_WEB_PORT=str(port),
        ORCHESTRATOR_LEASE_SECONDS="3",
        ORCHESTRATOR_HEARTBEAT_SECONDS="1",
        ORCHESTRATOR_WORKER_POLL_SECONDS="0.2",
        ORCHESTRATOR_PARSE_INTERVAL="1",
    )
    env.pop("ORCHESTRATOR_DATABASE_URL", None)
    logs: list[Path] = []

    def start() -> subprocess.Popen:
        path = tmp_path / f"standalone-{len(logs)}.log"
        logs.append(path)
        with open(path, "wb") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "orchestrator", "standalone"],
                cwd=tmp_path,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def tail() -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in logs)

    def trigger() -> bool:
        out = subprocess.run(
            [sys.executable, "-m", "orchestrator", "dags", "trigger", "victim"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return out.returncode == 0

    proc = start()
    store: Store | None = None
    task_pid = None
    try:
        wait_for(lambda: proc.poll() is None and trigger(), "the DAG to be triggered" + tail(), 60)
        wait_for(lambda: marker.exists() and marker.read_text(), "try 1 to start" + tail(), 60)
        task_pid = int(marker.read_text())
        store = Store(f"sqlite:///{tmp_path / '.orchestrator' / 'orchestrator.db'}")
        [run] = store.list_runs("victim")
        ti = store.task_instance(run.run_id, "long_task")
        assert (ti.state, ti.try_number, ti.max_tries) == ("running", 1, 1)

        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL

        proc = start()  # same folder, same database
        wait_for(
            lambda: store.get_run(run.run_id).state in ("success", "failed"),
            "the run to finish after the restart" + tail(),
            60,
        )
        assert store.get_run(run.run_id).state == "success", tail()
        tries = store.tries(run.run_id, "long_task")
        assert [(t.try_number, t.state, t.lost_reason) for t in tries] == [
            (1, "lost", "lease_expired"),
            (2, "success", None),
        ]
        ti = store.task_instance(run.run_id, "long_task")
        assert (ti.try_number, ti.max_tries, ti.lost_tries) == (2, 2, 1)
        assert store.results(run.run_id, ["long_task"]) == {"long_task": "2"}

        # the run may finish before the restarted web server listens
        wait_for(lambda: _serving(f"http://127.0.0.1:{port}/health"), "the UI" + tail(), 30)
        page = _get(f"http://127.0.0.1:{port}/runs/{run.run_id}/tasks/long_task")
        assert 'class="try-lost" data-lost-reason="lease_expired"' in page
        assert "(1 lost)" in page
        metrics = _get(f"http://127.0.0.1:{port}/metrics")
        assert 'orchestrator_task_tries_lost_total{reason="lease_expired"} 1.0' in metrics
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if task_pid is not None and alive(task_pid):
            os.kill(task_pid, signal.SIGKILL)
        if store is not None:
            store.dispose()
    assert proc.returncode == 0, tail()
