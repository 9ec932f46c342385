"""A try's log file, capped at ``max_log_bytes`` with a visible truncation marker.

Everything a try writes (its ``ctx.log`` lines, what a Python task prints, a shell
command's output) goes through one :class:`CappedLog`. Past the cap the output is
dropped, a marker line says so, and when the try ends one more line says how much was
dropped; the runner's own closing lines (``succeeded``, ``failed: ...``) are always
written, so the end of a truncated log still says how the try ended.

>>> log = CappedLog("/state/logs/etl/r/t/1.log", limit=10 * 2**20)   # doctest: +SKIP
>>> log.write("hello\\n"); log.end_of_output(); log.close()          # doctest: +SKIP
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable

from orchestrator.engine.masking import Masker
from orchestrator.state_folder import make_private_dir


def open_try_log(path: str) -> int:
    """Open (create, 0600 in 0700 folders) a try's log file for appending."""
    make_private_dir(os.path.dirname(path))
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)


class CappedLog(io.TextIOBase):
    """A text stream (for ``print``, logging, ``redirect_stdout``) over a capped file.

    Writes go straight to the file (one ``write`` system call each, like a line-buffered
    file): a try killed mid-way loses nothing it wrote before. With a ``masker``, every
    secret it knows is replaced by ``***`` before the bytes reach the file; the few
    bytes at the end of a write that may begin a secret wait for the next write.
    """

    def __init__(
        self, path: str, limit: int, masker: Masker | None = None, *, fd: int | None = None
    ) -> None:
        # ``fd``: the file opened by the worker (open_try_log) and handed over; the
        # task process then never opens anything in the state folder (issue 24)
        self._fd = open_try_log(path) if fd is None else fd
        self.limit = limit
        self.written = 0  # bytes of this try's output written
        self.dropped = 0  # bytes of it dropped past the cap
        self._capped = True
        self.masker = masker
        self._held = b""  # the end of the last write, that may begin a secret
        # what the try's processes write to file descriptors 1 and 2 arrives from
        # another thread (engine/fd_capture.py): one writer at a time
        self._lock = threading.RLock()
        self.child_fd: int | None = None  # fileno() for a child's output (the capture)
        self.drain_first: Callable[[], None] | None = None  # run before end_of_output

    def renew_lock(self) -> None:
        """A fresh lock, in a forked copy of the process (``fd_capture``)."""
        self._lock = threading.RLock()

    # -- the text stream interface ---------------------------------------------------------
    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.write_bytes(s.encode("utf-8", "backslashreplace"))
        return len(s)

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        """What ``subprocess.run(..., stdout=sys.stdout)`` hands a child: the captured
        output (masked and capped like the rest), not the raw file, when there is one."""
        return self.child_fd if self.child_fd is not None else self._fd

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        with self._lock:
            if not self.closed:
                self._release_held()
                os.close(self._fd)
            super().close()

    # -- bytes ---------------------------------------------------------------------------
    def write_bytes(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            self._write_bytes(data)

    def _write_bytes(self, data: bytes) -> None:
        if self.masker:
            data = self.masker.mask_bytes(self._held + data)
            keep = self.masker.held_back(data)
            self._held = data[len(data) - keep :] if keep else b""
            data = data[: len(data) - keep]
            if not data:
                return
        self._write_capped(data)

    def _write_capped(self, data: bytes) -> None:
        if not self._capped:
            self._write(data)
            return
        room = self.limit - self.written
        if room <= 0:
            self.dropped += len(data)
            return
        if len(data) > room:
            self.dropped += len(data) - room
            data = data[:room]
            self._write(data)
            self.written += len(data)
            self._write(
                f"\n[orchestrator: log truncated: this try wrote more than {self.limit} "
                "bytes (max_log_bytes); the rest of its output is dropped]\n".encode()
            )
            return
        self._write(data)
        self.written += len(data)

    def end_of_output(self) -> None:
        """The task is done: say how much was dropped; the runner's last lines go in whole."""
        if self.drain_first is not None:  # before the lock: the capture takes it to write
            self.drain_first()
        with self._lock:
            self._release_held()
            if self._capped and self.dropped:
                self._write(
                    f"[orchestrator: {self.dropped} bytes of output were dropped "
                    f"(max_log_bytes={self.limit})]\n".encode()
                )
            self._capped = False

    def _release_held(self) -> None:
        held, self._held = self._held, b""
        if held:
            self._write_capped(held)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
