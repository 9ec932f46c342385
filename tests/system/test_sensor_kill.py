"""A real worker process SIGKILLed between a sensor's pokes (issue 15): the sensor is
in the store, not in the worker, so another worker pokes it again at its next poke,
under the same try, and nothing is lost or counted as a failure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.clock import stamp
from tests.system.cluster import wait_for
from tests.system.test_worker_kill import WORKER_SCRIPT

pytestmark = pytest.mark.system


def test_a_sensor_whose_worker_is_sigkilled_between_pokes_is_poked_again(
    harness, write_dag, settings, tmp_path, monkeypatch, capsys
):
    flag = tmp_path / "flag"
    write_dag(
        "waiter.py",
        f"""
        import os
        from orchestrator import DAG, task

        with DAG("waiter", schedule=None) as dag:
            @task.sensor(poke_interval=40, timeout=3600, retries=0)
            def landed(ctx):
                return "here" if os.path.exists({str(flag)!r}) else None
        """,
    )
    assert harness.parse().dags == 1
    store = harness.store
    run = store.trigger_run("waiter", harness.clock.now())
    harness.tick()
    env = dict(
        os.environ,
        ORCHESTRATOR_DATABASE_URL=settings.database_url,
        ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
        ORCHESTRATOR_STATE_DIR=settings.state_dir,
        ORCHESTRATOR_LEASE_SECONDS=str(settings.lease_seconds),
        ORCHESTRATOR_HEARTBEAT_SECONDS=str(settings.heartbeat_seconds),
        ORCHESTRATOR_WORKER_POLL_SECONDS="0.1",
    )

    def waiting_long_enough():
        ti = store.task_instance(run.run_id, "landed")
        now = datetime.now(UTC)
        return ti.state == "up_for_reschedule" and ti.ready_at - now > timedelta(seconds=20)

    with open(tmp_path / "worker.log", "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT], env=env,
                                cwd=str(tmp_path), stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            wait_for(waiting_long_enough, "the first poke to be recorded", 60)
            os.kill(proc.pid, signal.SIGKILL)  # between pokes: nobody holds the sensor
            assert proc.wait(timeout=10) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    ti = store.task_instance(run.run_id, "landed")
    assert (ti.state, ti.try_number, ti.poke_count, ti.owner) == (
        "up_for_reschedule", 1, 1, None)  # fmt: skip
    assert harness.tick().reaped == []  # no lease to expire: nothing was lost
    # `tasks why` (the real clock) names the next poke
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    capsys.readouterr()
    assert main(["tasks", "why", run.run_id, "landed"]) == 0
    said = capsys.readouterr().out
    assert f"next poke at {stamp(ti.ready_at)}" in said, said
    assert "1 poke of try 1 found it unmet" in said

    flag.write_text("x")
    harness.clock.set(ti.ready_at)
    harness.tick()
    harness.worker.run_until_idle()
    ti = store.task_instance(run.run_id, "landed")
    assert (ti.state, ti.try_number, ti.lost_tries) == ("success", 1, 0)
    [only] = store.tries(run.run_id, "landed")
    assert (only.try_number, only.state, only.worker) == (1, "success", "test-worker")
    assert store.results(run.run_id, ["landed"]) == {"landed": '"here"'}
    log = Path(settings.log_dir, only.log_path).read_text()
    assert "poke 1: condition not met" in log and "poke 2: condition met" in log
    assert store.events(kind="stale_write_rejected") == []
