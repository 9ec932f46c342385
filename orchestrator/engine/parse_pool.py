"""A pool of long-lived child processes that import DAG files, for one scan.

Starting a process per file costs more than importing a typical DAG file (the
forkserver's start-up, re-importing ``__main__``, the first imports), so a scan hands
its files to a few children that each import many (:func:`orchestrator.engine.runner.parse_server`).
The guarantees of a process per file stay: a file that takes longer than
``parse_timeout`` gets its child killed, one that kills the interpreter takes only
its child with it; either becomes that file's import error, and a fresh child takes
over the remaining files. The children exit when the scan ends, so an idle
processor holds no parse processes.

Payloads come back file by file (:meth:`ParsePool.collect`), and a child stuck on one
file no longer holds the others back: after ``SLOW_AFTER`` seconds another child
starts for the waiting files, so a healthy file beside hanging ones is parsed at once.

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
from orchestrator.engine.task_processes import describe_exit
from orchestrator.engine.task_user import TaskUser
from orchestrator.engine.taskenv import EnvPolicy

Payload = dict[str, Any]


@dataclass
class _Child:
    process: Any
    conn: Connection
    path: str | None = None  # the file it is importing now
    started: float = 0.0  # monotonic, when it got that file
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
    """Children that import the files handed to :meth:`submit`; :meth:`collect` hands
    back each file's payload as soon as it is known, so one slow file delays nobody.

    A child importing one file for longer than ``SLOW_AFTER`` seconds stops counting
    towards ``size``: while files wait, another child starts for them (at most
    ``EXTRA_CHILDREN`` beyond ``size``), so a healthy file beside hanging ones is
    parsed at once rather than after their ``parse_timeout``.
    """

    SLOW_AFTER = 1.0
    EXTRA_CHILDREN = 4

    def __init__(
        self,
        ctx: Any,
        *,
        size: int,
        timeout: float,
        root: str,
        env_policy: EnvPolicy | None = None,
        user: TaskUser | None = None,
    ) -> None:
        self.ctx = ctx
        self.user = user  # task_user: DAG files are imported as it (issue 24)
        self.size = max(1, size)
        self.timeout = timeout
        self.root = root
        self.env_policy = env_policy
        self.children: list[_Child] = []
        self.pending: deque[str] = deque()

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _start(self) -> _Child:
        parent, child = self.ctx.Pipe()
        process = self.ctx.Process(
            target=parse_server, args=(child, self.root, self.env_policy, self.user), daemon=True
        )
        process.start()
        child.close()
        return _Child(process, parent)

    @property
    def busy(self) -> bool:
        """Whether a submitted file has no payload yet."""
        return bool(self.pending) or any(c.path for c in self.children)

    def in_flight(self) -> set[str]:
        """The submitted files that have no payload yet."""
        return set(self.pending) | {c.path for c in self.children if c.path}

    def submit(self, paths: list[str]) -> None:
        self.pending.extend(p for p in paths if p not in self.in_flight())

    def parse(self, paths: list[str]) -> dict[str, Payload]:
        """Each path's payload: ``{"dags": [...]}`` or ``{"error": ..., "traceback": ...}``."""
        self.submit(paths)
        results: dict[str, Payload] = {}
        while self.busy:
            results.update(self.collect(1.0))
        return results

    def collect(self, timeout: float) -> list[tuple[str, Payload]]:
        """The (path, payload) of every file finished within ``timeout`` seconds."""
        self._assign()
        busy = [c for c in self.children if c.path]
        if not busy:
            return []
        now = time.monotonic()
        until = min(c.deadline for c in busy) - now
        turning_slow = [c.started + self.SLOW_AFTER - now for c in busy]
        if self.pending and max(turning_slow) > 0:  # then start a child for the rest
            until = min(until, min(t for t in turning_slow if t > 0))
        ready = wait([c.conn for c in busy], min(timeout, max(0.0, until)))
        done: list[tuple[str, Payload]] = []
        for child in busy:
            path = child.path
            assert path is not None
            if child.conn in ready:
                try:
                    done.append((path, child.conn.recv()))
                    child.path = None
                    continue
                except (EOFError, OSError):
                    child.process.join(5)
                    done.append((path, {
                        "error": f"{display_path(path)}: the interpreter crashed "
                        f"while importing this file ({describe_exit(child.process.exitcode)})"
                    }))  # fmt: skip
            elif time.monotonic() > child.deadline:
                done.append((path, {
                    "error": f"{display_path(path)}: importing took longer than "
                    f"{self.timeout:g}s (parse_timeout) and was stopped"
                }))  # fmt: skip
            else:
                continue
            child.kill()
            self.children.remove(child)
        self._assign()
        return done

    def _assign(self) -> None:
        """Hand waiting files to idle children, starting children while fewer than
        ``size`` are idle or quick (and ``size + EXTRA_CHILDREN`` at most exist)."""
        now = time.monotonic()
        for i, child in enumerate(self.children):
            if child.path is None and self.pending:
                if not child.process.is_alive():  # died between files
                    child.kill()
                    child = self.children[i] = self._start()
                self._send(child, now)
        while self.pending and len(self.children) < self.size + self.EXTRA_CHILDREN:
            quick = [c for c in self.children if now - c.started < self.SLOW_AFTER]
            if len(quick) >= self.size:
                break
            child = self._start()
            self.children.append(child)
            self._send(child, now)

    def _send(self, child: _Child, now: float) -> None:
        child.path = self.pending.popleft()
        child.started = now
        child.deadline = now + self.timeout
        with contextlib.suppress(OSError):  # if it died, recv reports a crash
            child.conn.send(child.path)

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
