"""A pool of long-lived child processes that import DAG files, for one scan.

Starting a process per file costs more than importing a typical DAG file (the
forkserver's start-up, re-importing ``__main__``, the first imports), so a scan hands
its files to a few children that each import many (:func:`orchestrator.engine.runner.parse_server`).
The guarantees of a process per file stay: a file that takes longer than
``parse_timeout`` gets its child killed, one that kills the interpreter takes only
its child with it; either becomes that file's import error, and a fresh child takes
over the remaining files. The children exit when the scan ends, so an idle
processor holds no parse processes.

>>> with ParsePool(mp_context(), size=2, timeout=30, root="dags") as pool:  # doctest: +SKIP
...     payloads = pool.parse(["dags/a.py", "dags/b.py"])
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from orchestrator.authoring.loader import display_path
from orchestrator.engine.runner import parse_server
from orchestrator.engine.taskenv import EnvPolicy
from orchestrator.engine.worker import _describe_exit

Payload = dict[str, Any]


@dataclass
class _Child:
    process: Any
    conn: Connection
    path: str | None = None  # the file it is importing now
    deadline: float = 0.0  # monotonic

    def kill(self) -> None:
        pid = self.process.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # with anything the file started
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        self.process.join(5)
        self.conn.close()


class ParsePool:
    def __init__(
        self,
        ctx: Any,
        *,
        size: int,
        timeout: float,
        root: str,
        env_policy: EnvPolicy | None = None,
    ) -> None:
        self.ctx = ctx
        self.size = max(1, size)
        self.timeout = timeout
        self.root = root
        self.env_policy = env_policy
        self.children: list[_Child] = []

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _start(self) -> _Child:
        parent, child = self.ctx.Pipe()
        process = self.ctx.Process(
            target=parse_server, args=(child, self.root, self.env_policy), daemon=True
        )
        process.start()
        child.close()
        return _Child(process, parent)

    def parse(self, paths: list[str]) -> dict[str, Payload]:
        """Each path's payload: ``{"dags": [...]}`` or ``{"error": ..., "traceback": ...}``."""
        results: dict[str, Payload] = {}
        pending = deque(paths)
        while len(self.children) < min(self.size, len(pending)):
            self.children.append(self._start())
        while pending or any(c.path for c in self.children):
            for i, child in enumerate(self.children):
                if child.path is None and pending:
                    if not child.process.is_alive():  # died between files
                        child.kill()
                        child = self.children[i] = self._start()
                    child.path = pending.popleft()
                    child.deadline = time.monotonic() + self.timeout
                    with contextlib.suppress(OSError):  # if it died, recv reports a crash
                        child.conn.send(child.path)
            busy = [c for c in self.children if c.path]
            now = time.monotonic()
            ready = wait([c.conn for c in busy], max(0.0, min(c.deadline for c in busy) - now))
            for i, child in enumerate(self.children):
                if child.path is None:
                    continue
                if child.conn in ready:
                    try:
                        results[child.path] = child.conn.recv()
                        child.path = None
                        continue
                    except (EOFError, OSError):
                        child.process.join(5)
                        results[child.path] = {
                            "error": f"{display_path(child.path)}: the interpreter crashed "
                            f"while importing this file ({_describe_exit(child.process.exitcode)})"
                        }
                elif time.monotonic() > child.deadline:
                    results[child.path] = {
                        "error": f"{display_path(child.path)}: importing took longer than "
                        f"{self.timeout:g}s (parse_timeout) and was stopped"
                    }
                else:
                    continue
                child.kill()
                self.children[i] = self._start() if pending else _Child(child.process, child.conn)
        return results

    def close(self) -> None:
        """Ask the children to exit; kill those that do not within a second."""
        for child in self.children:
            with contextlib.suppress(OSError):
                child.conn.send(None)
        deadline = time.monotonic() + 1.0
        for child in self.children:
            child.process.join(max(0.0, deadline - time.monotonic()))
            if child.process.is_alive():
                child.kill()
            else:
                child.conn.close()
        self.children = []
