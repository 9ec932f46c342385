"""The processes a try leaves behind: found through /proc and ended with the try.

A task child makes itself a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``, what
``tini`` and systemd do): a process the try started that is orphaned later (a
double-forked daemon, a ``setsid``/``nohup`` child whose parent exited) is re-parented
to the task child instead of to init, so every process a try started is a descendant
of its task child until the try ends. Descendants are read from
``/proc/<pid>/task/<tid>/children``; the fast path (nothing was started) reads one
small file.

>>> end_descendants(os.getpid())   # after a try: SIGKILL and reap what it left  # doctest: +SKIP
0
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 50  # a tree that keeps forking is chased this many rounds at most


def become_subreaper() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _children(pid: int) -> list[int]:
    """Live (not zombie) direct children of ``pid``; [] if it is gone."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                data = f.read()
        except OSError:
            continue
        out.extend(int(p) for p in data.split())
    return [p for p in out if not _is_zombie(p)] if out else out


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True  # gone
    return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X")


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, parents before their children."""
    found: list[int] = []
    todo = _children(pid)
    seen = set()
    while todo:
        p = todo.pop(0)
        if p in seen:
            continue
        seen.add(p)
        found.append(p)
        todo.extend(_children(p))
    return found


def _kill(pids: list[int]) -> None:
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)


def _reap() -> None:
    """Collect the exit status of this process's dead children (orphans it adopted)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_descendants(pid: int) -> int:
    """SIGKILL every descendant of ``pid`` (this process), reap them; how many there were.

    Killed processes' own children are re-parented to this subreaper and found in the
    next round, so a tree that forks while it is being ended is still ended.
    """
    ended: set[int] = set()
    for _ in range(_ROUNDS):
        found = descendants(pid)
        if not found:
            break
        _kill(found)
        ended.update(found)
        _wait_dead(found)
        _reap()
    _reap()
    return len(ended)


def _wait_dead(pids: list[int], timeout: float = 1.0) -> None:
    """Give SIGKILLed processes a moment to exit (it is quick, but not instant)."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if not _is_zombie(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.001)
        left = [p for p in left if not _is_zombie(p)]


def kill_tree(pid: int) -> None:
    """Kill the task child ``pid``, its process group and every descendant.

    The child is stopped first (SIGSTOP): it forks no more, and, a subreaper, it still
    adopts the orphans of the descendants killed round by round; then it is killed.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    for _ in range(_ROUNDS):
        found = descendants(pid)
        if not found:
            break
        _kill(found)
        _wait_dead(found)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
