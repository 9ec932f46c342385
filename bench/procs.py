"""The engine as separate processes: ``orchestrator scheduler`` and ``orchestrator worker``.

This is how a PostgreSQL deployment runs it: each service its own process, woken
across processes by LISTEN/NOTIFY (``orchestrator/engine/wakeup.py``). The bench talks to
them only through the database (and a NOTIFY to wake the scheduler after a trigger).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from typing import Any

from sqlalchemy import select

from orchestrator.engine import wakeup
from orchestrator.store.core import models as m


class ProcessEngine:
    """A scheduler process and N worker processes on one database, started by the bench."""

    def __init__(self, store: Any, settings: Any, workers: int, concurrency: int, workdir: str):
        self.store = store
        self.settings = settings
        self.workers = workers
        self.workdir = workdir
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
        env.update(
            ORCHESTRATOR_DATABASE_URL=settings.database_url,
            ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
            ORCHESTRATOR_STATE_DIR=settings.state_dir,
            ORCHESTRATOR_WORKER_CONCURRENCY=str(concurrency),
            ORCHESTRATOR_PARSE_TIMEOUT="120",
            # the bench's own no-op tasks, on machines where it runs as root (issue 24)
            ORCHESTRATOR_ALLOW_ROOT_TASKS="1",
        )
        self.env = env
        self.procs: list[subprocess.Popen] = []
        self.notifier = wakeup.Notifier(settings.database_url)

    def _spawn(self, name: str, *args: str) -> None:
        log = open(os.path.join(self.workdir, f"{name}.log"), "wb")  # noqa: SIM115
        self.procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "orchestrator", *args],
                env=self.env,
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def start(self, timeout: float = 60.0) -> None:
        self._spawn("scheduler", "scheduler")
        for i in range(self.workers):
            self._spawn(f"worker{i}", "worker")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # ready: a leader, and every worker registered
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args} exited with {p.returncode}: see {self.workdir}")
            with self.store.read() as conn:
                leader = conn.execute(select(m.scheduler_lease.c.holder)).first()
                alive = conn.execute(
                    select(m.workers.c.worker_id).where(m.workers.c.stopped_at.is_(None))
                ).all()
            if leader is not None and len(alive) >= self.workers:
                time.sleep(0.5)  # let the LISTEN connections settle and the loops go idle
                return
            time.sleep(0.05)
        raise RuntimeError(f"scheduler/worker processes not ready after {timeout:g}s")

    def wake_scheduler(self) -> None:
        self.notifier.notify(wakeup.FINISHED)

    def close(self, timeout: float = 15.0) -> None:
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        self.notifier.close()
