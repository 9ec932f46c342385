"""A real worker process killed with SIGKILL mid-task: its task dies with it, the lease
is reaped, and another worker finishes the run. Nothing is lost, nothing runs twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from tests.system.cluster import wait_for

pytestmark = pytest.mark.system

WORKER_SCRIPT = """
import threading
from orchestrator.clock import SystemClock
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.engine.worker import Worker

settings = Settings.load()
store = Store(settings.database_url)
Worker(store, SystemClock(), settings, worker_id="doomed-worker", concurrency=2).run_forever(
    threading.Event()
)
"""


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_sigkilled_worker_loses_its_task_and_the_retry_completes_the_run(
    harness, write_dag, settings, tmp_path
):
    marker = tmp_path / "marker.pid"
    write_dag(
        "victim.py",
        f"""
        import os, time
        from orchestrator import DAG, task

        with DAG("victim", schedule=None, retry_delay=1) as dag:
            @task(retries=1)
            def long_task(ctx):
                if ctx.try_number == 1:
                    with open({str(marker)!r}, "w") as f:
                        f.write(str(os.getpid()))
                    time.sleep(60)
                return ctx.try_number
        """,
    )
    assert harness.parse().dags == 1
    store = harness.store
    run = store.trigger_run("victim", harness.clock.now())
    harness.tick()
    assert store.task_instance(run.run_id, "long_task").state == "queued"

    env = dict(
        os.environ,
        ORCHESTRATOR_DATABASE_URL=settings.database_url,
        ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
        ORCHESTRATOR_STATE_DIR=settings.state_dir,
        ORCHESTRATOR_LEASE_SECONDS=str(settings.lease_seconds),
        ORCHESTRATOR_HEARTBEAT_SECONDS=str(settings.heartbeat_seconds),
        ORCHESTRATOR_WORKER_POLL_SECONDS="0.1",
    )
    with open(tmp_path / "worker.log", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER_SCRIPT],
            env=env,
            cwd=str(tmp_path),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(
                lambda: (
                    marker.exists()
                    and marker.read_text()
                    and store.task_instance(run.run_id, "long_task").state == "running"
                ),
                "the first try to start",
            )
            task_pid = int(marker.read_text())
            assert alive(task_pid)
            ti = store.task_instance(run.run_id, "long_task")
            assert (ti.owner, ti.try_number) == ("doomed-worker", 1)

            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=10) == -signal.SIGKILL
            wait_for(lambda: not alive(task_pid), "the task process to die with its worker", 10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "Traceback" not in log, log

    # Nothing happens until the lease expires: the store still says running.
    ti = store.task_instance(run.run_id, "long_task")
    assert ti.state == "running"
    harness.clock.set(ti.lease_expires_at)
    assert harness.tick().reaped == []
    harness.clock.set(ti.lease_expires_at + timedelta(seconds=1))
    # lost to infrastructure: queued again at once, its one retry untouched
    assert harness.tick().reaped == [(run.run_id, "long_task", 1, "queued")]
    [first] = store.tries(run.run_id, "long_task")
    assert (first.state, first.lost_reason, first.worker) == (
        "lost",
        "lease_expired",
        "doomed-worker",
    )

    # A new worker (in process, fake clock) picks the retry up and finishes the run.
    done = harness.run_until_finished(run.run_id, step=timedelta(seconds=2))
    assert done.state == "success"
    tries = store.tries(run.run_id, "long_task")
    assert [(t.try_number, t.state, t.worker) for t in tries] == [
        (1, "lost", "doomed-worker"),
        (2, "success", "test-worker"),
    ]
    assert store.results(run.run_id, ["long_task"]) == {"long_task": "2"}
    assert store.events(kind="stale_write_rejected") == []
