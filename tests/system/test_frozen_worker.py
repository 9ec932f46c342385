"""A worker frozen (SIGSTOP) at any instant must not stall the cluster (issue 32).

Real processes on the real PostgreSQL: a scheduler, a worker that keeps working, and a
worker that, at random instants chosen by the test, stops itself with SIGSTOP right
after one of its statements (a claim, a finish, a heartbeat, a log ship, a hand-back:
whichever comes the chosen number of statements later), still inside that statement's
transaction and so holding whatever rows it locked. On every stop, the other worker
must go on starting tasks while the frozen one is still stopped: the server ends the
frozen session after ``idle_in_transaction_session_timeout`` (a tenth of the lease),
which releases its locks, and the waiters' bounded lock waits are retried.

The stop that used to stall everyone: right after a psycopg ``executemany`` (the
claim's insert of several tries), whose pipeline left the session with no
idle-in-transaction bound at all (``store/core/db.py``,
``_rearm_idle_timeout_after_executemany``). Each window records what the frozen
worker had just run and how long the other worker took to start a task; the longest
is the bound docs/cluster.md states.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from orchestrator.store.core import models as m
from tests.system.cluster import cluster, wait_for
from tests.system.test_cluster import pg_settings, pg_store  # noqa: F401 - fixtures

pytestmark = [pytest.mark.system, pytest.mark.postgres]

LEASE = {
    # the cluster: a 6 s lease, so locks and idle transactions are bounded at
    # 0.6 s (a tenth of the lease) and statements at 5 s (the floor)
    "ORCHESTRATOR_LEASE_SECONDS": "6",
    "ORCHESTRATOR_HEARTBEAT_SECONDS": "2",
    "ORCHESTRATOR_SCHEDULER_INTERVAL": "0.2",
    "ORCHESTRATOR_WORKER_POLL_SECONDS": "0.2",
    "ORCHESTRATOR_PARSE_INTERVAL": "60",
    "ORCHESTRATOR_LOG_SHIP_SECONDS": "0.5",
}
STOPS = 50  # per run; two runs: 100 windows
WINDOW = 2.0  # seconds a stop lasts at most (the 2 s): a start must come within it
GRACE = 0.3  # a task dispatched in the instant the stop began may start inside it

FREEZING_WORKER = """
import os, signal, sys, threading, time

from sqlalchemy import event

from orchestrator.clock import SystemClock
from orchestrator.engine.worker import Worker
from orchestrator.settings import Settings
from orchestrator.store import Store

FLAG = sys.argv[1]
settings = Settings.load()
store = Store(settings.database_url, settings=settings)
countdown = [None]


@event.listens_for(store.engine, "after_cursor_execute")
def freeze(conn, cursor, statement, parameters, context, executemany):
    # test hook: the flag holds N; N statements later, inside that statement's
    # transaction, stop this whole process (every thread: the round, the heartbeat)
    if countdown[0] is None:
        if not os.path.exists(FLAG):
            return
        countdown[0] = int(open(FLAG).read() or 0)
        os.unlink(FLAG)
    if countdown[0] > 0:
        countdown[0] -= 1
        return
    countdown[0] = None
    what = " ".join(statement.split()[:3]) + (" (executemany)" if executemany else "")
    with open(FLAG + ".stopped", "w") as f:
        f.write(what)
    os.kill(os.getpid(), signal.SIGSTOP)


Worker(store, SystemClock(), settings, worker_id="frozen-worker", concurrency=2).run_forever(
    threading.Event()
)
"""


def wide_dag(n: int, sleep: float, starts: Path) -> str:
    return f"""
import os, time
from orchestrator import DAG, task

STARTS = {str(starts)!r}

with DAG("wide", schedule=None) as dag:
    def work(ctx):
        # one line per start, appended whole (O_APPEND): when each try began
        fd = os.open(STARTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{{time.time():.4f}}\\n".encode())
        os.close(fd)
        time.sleep({sleep})

    for i in range({n}):
        task(task_id=f"t{{i}}")(work)
"""


def state_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def starts_after(path: Path, t: float) -> list[float]:
    if not path.exists():
        return []
    return [float(x) for x in path.read_text().split() if float(x) > t]


@pytest.mark.parametrize("run", [1, 2])
def test_a_worker_frozen_at_any_instant_does_not_stall_the_other(
    pg_settings,  # noqa: F811
    pg_store,  # noqa: F811
    write_dag,
    tmp_path,
    run,
):
    starts = tmp_path / "starts.log"
    write_dag("wide.py", wide_dag(4000, 0.05, starts))
    flag = tmp_path / "freeze-now"
    stopped = Path(str(flag) + ".stopped")
    rng = random.Random()
    windows: list[tuple[str, float]] = []  # (what the frozen worker ran last, seconds)
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
        run_row = pg_store.trigger_run("wide", datetime.now(UTC))
        wait_for(lambda: len(starts_after(starts, 0)) > 40, "both workers to start tasks", 60)
        for _ in range(STOPS):
            time.sleep(rng.uniform(0.05, 0.5))  # a random instant...
            flag.write_text(str(rng.randrange(0, 12)))  # ...and a random statement after it
            wait_for(
                lambda: stopped.exists() and state_of(frozen.pid) == "T",
                "the worker to stop after one of its statements",
                20,
            )
            stopped_at = time.time()
            what = stopped.read_text()
            first: float | None = None
            while time.time() - stopped_at < WINDOW:
                later = starts_after(starts, stopped_at + GRACE)
                if later:
                    first = min(later)
                    break
                time.sleep(0.02)
            assert state_of(frozen.pid) == "T"  # still stopped for the whole measurement
            os.kill(frozen.pid, signal.SIGCONT)
            stopped.unlink()
            waited = (first if first is not None else time.time()) - stopped_at
            windows.append((what, waited))
            assert first is not None, (
                f"stop {len(windows)} (after {what!r}): no task started anywhere for "
                f"{waited:.1f}s while a worker was frozen; windows so far: {windows}\n" + c.logs()
            )
        assert pg_store.get_run(run_row.run_id).state == "running"  # outlasted the stops
        # the frozen worker recovers on every resume: its dead session is replaced, what
        # it had finished is recorded after all, and it goes on working
        mine = _tries_of(pg_store, "frozen-worker")
        wait_for(lambda: _tries_of(pg_store, "frozen-worker") > mine, "the frozen one again", 30)
        assert frozen.poll() is None
    longest = max(windows, key=lambda w: w[1])
    print(
        f"\n{len(windows)} stops; the longest wait for the other worker's next start: "
        f"{longest[1]:.2f}s (after {longest[0]!r}); all: "
        + ", ".join(f"{w:.2f}" for _, w in windows)
        + "\nstopped after: "
        + ", ".join(f"{k} x{n}" for k, n in Counter(w for w, _ in windows).most_common())
    )


def _tries_of(store, worker: str) -> int:
    t = m.task_tries
    with store.read() as conn:
        return conn.execute(
            select(func.count()).select_from(t).where(t.c.worker == worker)
        ).scalar_one()
