"""The task process's file descriptors 1 and 2, read into the running try's log.

``print`` in a Python task writes to ``sys.stdout``, which the runner points at the
try's :class:`~orchestrator.engine.tasklog.CappedLog`. What does not go through
``sys.stdout`` (a subprocess the task starts, C code, ``os.write(1, ...)``) writes to
the process's file descriptors 1 and 2. Those are a pipe here, read by one thread of
the task process into the current try's log, so that output too is masked, capped and
kept with its try, instead of reaching the worker's terminal unmasked. Between tries
(nothing attached) it goes on to the worker's standard error.

>>> capture = FdCapture()           # doctest: +SKIP  (once per task process)
>>> capture.attach(log)             # doctest: +SKIP  (a try starts)
>>> capture.detach()                # doctest: +SKIP  (it ended: what is left is drained)
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator

from orchestrator.engine.tasklog import CappedLog

CHUNK = 65536


class FdCapture:
    def __init__(self) -> None:
        self._read, self._write = os.pipe()  # both close on exec; 1 and 2 are inherited
        self._out = os.dup(2)  # the worker's standard error, for output between tries
        os.set_blocking(self._read, False)
        self._point_fds()
        self._log: CappedLog | None = None
        self._lock = threading.Lock()
        # a copy the task forks has no pump thread, and the pump may have held a lock
        # at the fork: the copy gets fresh ones (as the logging module does), so its
        # prints never wait on a thread that is not there
        os.register_at_fork(after_in_child=self._after_fork)
        threading.Thread(target=self._pump, name="fd-capture", daemon=True).start()

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        if self._log is not None:
            self._log.renew_lock()

    def _point_fds(self) -> None:
        """Make 1 and 2 the pipe again (a try may have closed or moved them)."""
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                os.dup2(self._write, fd)

    def attach(self, log: CappedLog) -> None:
        """The try writing ``log`` starts: its processes' output goes to it."""
        self._point_fds()
        with self._lock:
            self._drain()  # what came between tries
            self._log = log
        log.child_fd = 1
        log.drain_first = self.drain

    def drain(self) -> None:
        """Copy everything written to 1 and 2 so far into the log, before its end."""
        with self._lock:
            self._drain()

    def detach(self) -> None:
        with self._lock:
            self._drain()
            self._log = None

    def _pump(self) -> None:
        while True:
            try:
                select.select([self._read], [], [])
            except (OSError, ValueError):
                return
            with self._lock:
                self._drain()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._read, CHUNK)
            except BlockingIOError:
                return
            except OSError:
                return
            if not data:
                return
            if self._log is not None and not self._log.closed:
                self._log.write_bytes(data)
            else:
                with contextlib.suppress(OSError):
                    os.write(self._out, data)


@contextlib.contextmanager
def fds_into(write_bytes: Callable[[bytes], None], *, linger: float = 2.0) -> Iterator[None]:
    """While inside, file descriptors 1 and 2 of this process are a pipe whose bytes go
    to ``write_bytes`` (from a thread): ``os.write(1, ...)``, C code and subprocesses
    that inherit them included. On the way out they are put back; what is still in the
    pipe is drained, waiting at most ``linger`` seconds for a child still holding it.
    ``tasks test`` masks a try's whole output this way (issue 24 item 4)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = (os.dup(1), os.dup(2))
    read, write = os.pipe()
    os.dup2(write, 1)
    os.dup2(write, 2)
    os.close(write)

    def pump() -> None:
        while True:
            try:
                data = os.read(read, CHUNK)
            except OSError:
                return
            if not data:
                return
            write_bytes(data)

    thread = threading.Thread(target=pump, name="tasks-test-fds", daemon=True)
    thread.start()
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved[0], 1)  # the pipe's last write ends here close: the pump sees EOF
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        thread.join(linger)
        if not thread.is_alive():
            os.close(read)
