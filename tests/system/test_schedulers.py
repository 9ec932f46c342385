"""Two real scheduler processes on one database; the leader is killed with SIGKILL.

The standby takes over with a higher epoch once the lease expires, and across the
whole time every fire time gets exactly one run: none twice, none missed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.engine.processor import DagProcessor
from tests.system.cluster import wait_for

pytestmark = pytest.mark.system

SCHEDULER_SCRIPT = """
import sys, threading
from orchestrator.clock import SystemClock
from orchestrator.engine.scheduler import Scheduler
from orchestrator.settings import Settings
from orchestrator.store import Store

settings = Settings.load()
store = Store(settings.database_url)
Scheduler(store, SystemClock(), settings, scheduler_id=sys.argv[1]).run_forever(threading.Event())
"""


def test_killed_leader_is_replaced_and_every_fire_time_runs_once(
    store, settings, write_dag, tmp_path
):
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    write_dag(
        "every_second.py",
        f"""
        from datetime import datetime, timedelta
        from orchestrator import DAG, task

        with DAG("every_second", schedule=timedelta(seconds=1), misfire="backfill",
                 start_date=datetime.fromisoformat({start.isoformat()!r})) as dag:
            @task
            def only():
                return 1
        """,
    )
    assert DagProcessor(store, settings).scan(datetime.now(UTC)).dags == 1
    env = dict(
        os.environ,
        ORCHESTRATOR_DATABASE_URL=settings.database_url,
        ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
        ORCHESTRATOR_STATE_DIR=settings.state_dir,
        ORCHESTRATOR_LEASE_SECONDS="2",
        ORCHESTRATOR_HEARTBEAT_SECONDS="1",
        ORCHESTRATOR_SCHEDULER_INTERVAL="0.1",
    )
    procs: dict[str, subprocess.Popen] = {}
    with open(tmp_path / "schedulers.log", "wb") as out:
        try:
            for name in ("sched-a", "sched-b"):
                procs[name] = subprocess.Popen(
                    [sys.executable, "-c", SCHEDULER_SCRIPT, name],
                    env=env,
                    cwd=str(tmp_path),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            first = wait_for(store.leader, "a leader")
            leader, epoch = first[0], first[1]
            wait_for(lambda: len(store.list_runs("every_second", limit=1000)) >= 7, "runs")
            assert store.leader()[:2] == (leader, epoch)  # renewed, not flapping

            os.kill(procs[leader].pid, signal.SIGKILL)
            assert procs[leader].wait(timeout=10) == -signal.SIGKILL
            killed_at = datetime.now(UTC)
            standby = next(n for n in procs if n != leader)
            taken = wait_for(
                lambda: (lease := store.leader()) and lease[0] == standby and lease,
                "the standby to take over",
            )
            assert taken[1] > epoch
            # the new leader keeps creating runs, including the ones missed meanwhile
            wait_for(
                lambda: (
                    max(r.logical_date for r in store.list_runs("every_second", limit=1))
                    >= killed_at + timedelta(seconds=2)
                ),
                "runs after the takeover",
            )
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
    log = (tmp_path / "schedulers.log").read_text(errors="replace")
    assert "Traceback" not in log, log

    runs = store.list_runs("every_second", limit=10_000)
    dates = Counter(r.logical_date for r in runs)
    assert max(dates.values()) == 1
    cursor = store.get_dag("every_second").next_logical_date
    expected = int((cursor - start).total_seconds())
    assert sorted(dates) == [start + timedelta(seconds=i) for i in range(expected)]
    holders = [e.message.split(";")[0] for e in reversed(store.events(kind="leader_acquired"))]
    assert holders[0] == f"scheduler {leader} became leader (epoch {epoch})"
    assert f"scheduler {standby} became leader (epoch {taken[1]})" in holders
