"""Wiping a process's starting environment from ``/proc/<pid>/environ``.

``/proc/<pid>/environ`` shows the environment a process was *started* with, whatever it
did to ``os.environ`` since, and any process of the same user can read it; a process
forked from another inherits the block. So a task process, whose ``os.environ`` lost
``ORCHESTRATOR_*`` (``taskenv.EnvPolicy``), could still read the database URL from its
own ``/proc/self/environ`` (inherited from the forkserver that forked it), or from its
worker's. :func:`hide_start_environment` moves every variable to memory of its own
(``putenv``: ``os.environ``, ``getenv`` and child processes are unchanged) and then
zeroes the starting block, as ``setproctitle`` does with it. The worker calls it before
it starts its forkserver, and the forkserver calls it when it starts
(``engine/forkserver_init.py``), so no task process inherits a readable copy.
"""

from __future__ import annotations

import ctypes
import os
import sys


def start_environment_span() -> tuple[int, int] | None:
    """(env_start, env_end) of this process, from ``/proc/self/stat`` (Linux)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[47]), int(fields[48])  # fields 50 and 51 of proc(5)
    except (OSError, ValueError, IndexError):
        return None
    return (start, end) if 0 < start < end else None


_HIDDEN_IN: set[int] = set()  # the pids that did it (a forked copy shares the block)


def hide_start_environment() -> bool:
    """Zero this process's starting environment block; True if it is done (once per
    process: later calls do nothing). Call it before threads start: a ``getenv``
    running meanwhile could read a zeroed value."""
    if os.getpid() in _HIDDEN_IN:
        return True
    if not sys.platform.startswith("linux"):
        return False
    span = start_environment_span()
    if span is None:
        return False
    for name, value in os.environb.items():
        os.putenv(name, value)  # a copy on the heap: the block is no longer referenced
    start, end = span
    ctypes.memset(start, 0, end - start)
    _HIDDEN_IN.add(os.getpid())
    return True
