"""Starting and killing real `orchestrator` processes against one database: a
standalone, a cluster of schedulers and workers, and one-off CLI commands."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(cwd: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """One `orchestrator ARGV...` command run in ``cwd`` (with ``env`` added to ours)."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv],
        cwd=cwd,
        env=dict(os.environ, **(env or {})),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextmanager
def standalone(tmp_path: Path, **env: str) -> Iterator[subprocess.Popen]:
    """A real `orchestrator standalone` in ``tmp_path``, stopped with SIGTERM at the end,
    which must exit 0; its output is in ``tmp_path/standalone.log``. Its database is the
    state folder's SQLite file unless ``env`` names ORCHESTRATOR_DATABASE_URL."""
    environ = dict(os.environ)
    environ.pop("ORCHESTRATOR_DATABASE_URL", None)
    environ.update(env)
    with open(tmp_path / "standalone.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "standalone"],
            cwd=tmp_path,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield proc
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, (tmp_path / "standalone.log").read_text()[-3000:]


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
