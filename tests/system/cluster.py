"""Starting and killing real `orchestrator` processes against one database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll a REAL process's progress with a bounded deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Cluster:
    """Schedulers and workers as real processes, all killed for real at the end."""

    def __init__(self, settings: Any, tmp_path: Path, **env: str) -> None:
        self.tmp = tmp_path
        self.env = dict(
            os.environ,
            ORCHESTRATOR_DATABASE_URL=settings.database_url,
            ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
            ORCHESTRATOR_STATE_DIR=settings.state_dir,
            **env,
        )
        self.procs: list[subprocess.Popen] = []
        self._logs: list[Any] = []

    def start(self, *argv: str) -> subprocess.Popen:
        log = open(self.tmp / f"proc-{len(self.procs)}-{argv[0]}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *argv],
            env=self.env,
            cwd=self.tmp,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        self._logs.append(log)
        return proc

    def kill(self, proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        proc.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            proc.wait(30)

    def logs(self) -> str:
        out = []
        for f in self._logs:
            f.flush()
            out.append(Path(f.name).read_text()[-2000:])
        return "\n---\n".join(out)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait(30)
        for f in self._logs:
            f.close()


@contextmanager
def cluster(settings: Any, tmp_path: Path, **env: str) -> Iterator[Cluster]:
    c = Cluster(settings, tmp_path, **env)
    try:
        yield c
    finally:
        c.close()


def pid_of(holder: str) -> int:
    """Scheduler and worker ids are host:pid:suffix."""
    return int(holder.split(":")[1])
