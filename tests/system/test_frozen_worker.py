"""A worker frozen (SIGSTOP) inside a transaction must not stall the cluster.

Real processes on the real PostgreSQL: a scheduler, a worker that keeps working, and a
worker that, at random instants chosen by the test, stops itself with SIGSTOP inside a
finishing transaction, after its statements ran (it holds the run's row lock) and
before COMMIT. On every stop, the other worker must go on starting tasks of the same
run while the frozen one is still stopped: the server ends the frozen session after
``idle_in_transaction_session_timeout`` (a tenth of the lease), which releases its
locks, and the waiters' bounded lock waits are retried. Without those bounds, every
other process waits on the frozen lock for as long as the stop lasts.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from orchestrator.store.core import models as m
from tests.system.cluster import cluster, wait_for
from tests.system.test_cluster import pg_settings, pg_store  # noqa: F401 - fixtures

pytestmark = [pytest.mark.system, pytest.mark.postgres]

LEASE = {
    # a 10 s lease: locks and idle transactions are bounded at 1 s, statements at 3.3 s
    "ORCHESTRATOR_LEASE_SECONDS": "10",
    "ORCHESTRATOR_HEARTBEAT_SECONDS": "2",
    "ORCHESTRATOR_SCHEDULER_INTERVAL": "0.2",
    "ORCHESTRATOR_WORKER_POLL_SECONDS": "0.2",
    "ORCHESTRATOR_PARSE_INTERVAL": "60",
}
STOPS = 12
WINDOW = 4.0  # seconds a stop lasts at most; the other worker must start a task within it
GRACE = 0.3  # a task may start in the instant the stop begins, before the lock bites

FREEZING_WORKER = """
import os, signal, sys, threading, time
from contextlib import contextmanager

from orchestrator.clock import SystemClock
from orchestrator.engine.worker import Worker
from orchestrator.settings import Settings
from orchestrator.store import Store

FLAG = sys.argv[1]


class FreezingStore(Store):
    # test hook: when FLAG exists, stop this whole process inside the next finishing
    # transaction, after its statements (run rows locked, tries written), before COMMIT
    finishing = False

    def _finish(self, *args, **kwargs):
        self.finishing = True
        try:
            return super()._finish(*args, **kwargs)
        finally:
            self.finishing = False

    @contextmanager
    def write(self):
        with super().write() as conn:
            yield conn
            if self.finishing and os.path.exists(FLAG):
                os.unlink(FLAG)
                with open(FLAG + ".stopped", "w") as f:
                    f.write(str(time.time()))
                os.kill(os.getpid(), signal.SIGSTOP)


settings = Settings.load()
store = FreezingStore(settings.database_url, settings=settings)
Worker(store, SystemClock(), settings, worker_id="frozen-worker", concurrency=2).run_forever(
    threading.Event()
)
"""


def wide_dag(n: int, sleep: float) -> str:
    return f"""
import time
from orchestrator import DAG, task

with DAG("wide", schedule=None) as dag:
    def work(ctx):
        time.sleep({sleep})

    for i in range({n}):
        task(task_id=f"t{{i}}")(work)
"""


def state_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def started_by(store, *, frozen: bool) -> int:
    """Tries started so far by the freezing worker, or by the others."""
    t = m.task_tries
    mine = t.c.worker == "frozen-worker"
    with store.read() as conn:
        return conn.execute(
            select(func.count()).select_from(t).where(mine if frozen else ~mine)
        ).scalar_one()


def test_a_worker_frozen_inside_a_transaction_does_not_stall_the_others(
    pg_settings,  # noqa: F811
    pg_store,  # noqa: F811
    write_dag,
    tmp_path,
):
    write_dag("wide.py", wide_dag(3000, 0.05))
    flag = tmp_path / "freeze-now"
    stopped = Path(str(flag) + ".stopped")
    rng = random.Random()
    windows: list[tuple[float, int]] = []  # (seconds until the other worker started, count)
    with cluster(pg_settings, tmp_path, **LEASE) as c:
        c.start("scheduler")
        c.start("worker", "--concurrency", "2")
        log = open(tmp_path / "frozen-worker.log", "w")  # noqa: SIM115
        c._logs.append(log)
        frozen = subprocess.Popen(
            [sys.executable, "-c", FREEZING_WORKER, str(flag)],
            env=c.env,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        c.procs.append(frozen)
        wait_for(lambda: pg_store.list_dags(), "the DAG to be parsed", 60)
        run = pg_store.trigger_run("wide", datetime.now(UTC))
        wait_for(lambda: started_by(pg_store, frozen=False) > 20, "the other worker", 60)
        wait_for(lambda: started_by(pg_store, frozen=True) > 20, "the freezing worker", 60)
        for _ in range(STOPS):
            time.sleep(rng.uniform(0.1, 0.9))  # a random instant
            flag.touch()
            wait_for(
                lambda: stopped.exists() and state_of(frozen.pid) == "T",
                "the worker to stop inside a finishing transaction",
                20,
            )
            stopped_at = time.monotonic()
            time.sleep(GRACE)
            before = started_by(pg_store, frozen=False)
            while time.monotonic() - stopped_at < WINDOW:
                after = started_by(pg_store, frozen=False)
                if after > before:
                    break
                time.sleep(0.05)
            waited = time.monotonic() - stopped_at
            assert state_of(frozen.pid) == "T"  # still stopped for the whole measurement
            windows.append((waited, after - before))
            os.kill(frozen.pid, signal.SIGCONT)
            stopped.unlink()
            assert after > before, (
                f"stop {len(windows)}: nothing started anywhere for {waited:.1f}s while a "
                f"worker was frozen inside a transaction; windows so far: {windows}\n" + c.logs()
            )
        assert pg_store.get_run(run.run_id).state == "running"  # the run outlasted the stops
        # the frozen worker recovers on every resume: its dead session is replaced, its
        # finished tries are recorded after all, and it goes on working
        mine = started_by(pg_store, frozen=True)
        wait_for(lambda: started_by(pg_store, frozen=True) > mine, "the frozen worker again", 30)
        assert frozen.poll() is None
    log_text = (tmp_path / "frozen-worker.log").read_text()
    assert "idle-in-transaction timeout" in log_text or "terminating connection" in log_text, (
        log_text[-3000:]
    )
    print(f"{len(windows)} stops; seconds until the other worker started a task: "
          + ", ".join(f"{w:.2f}" for w, _ in windows))  # fmt: skip
