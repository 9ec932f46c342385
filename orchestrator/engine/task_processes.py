"""The worker's task processes: long-lived children started from a forkserver, one try
at a time each, and the channel protocol between them and the worker.

A child is killed and replaced when a try times out, crashes it, loses its lease, or
something other than the child speaks on its channel (a process the task forked).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import send_handle
from typing import Any

from orchestrator.engine.proctree import kill_tree
from orchestrator.engine.runner import task_child
from orchestrator.engine.task_user import TaskUser
from orchestrator.engine.task_user import resolve as resolve_task_user
from orchestrator.engine.taskenv import EnvPolicy
from orchestrator.engine.tasklog import open_try_log
from orchestrator.errors import ConfigError
from orchestrator.store.core.records import Claim


def mp_context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        [
            "orchestrator.engine.forkserver_init",  # first: no task inherits its environ
            "orchestrator.engine.runner",
            "orchestrator.authoring.dag",
            "orchestrator.authoring.context",
        ]
    )
    return ctx


def start_forkserver(policy: EnvPolicy) -> None:
    """Start multiprocessing's resource tracker and forkserver now, from the environment
    ``policy`` leaves a task (issue 24, item 2).

    Both are new programs (``exec``): their ``/proc/<pid>/environ`` is the environment
    they were started with, and the resource tracker never wipes it as the forkserver
    does (``forkserver_init``). So neither is given the settings' secrets, or anything
    else a task may not inherit. Call it before any thread starts (``os.environ`` is
    swapped meanwhile); a forkserver already running is left as it is.
    """
    from multiprocessing import forkserver

    mp_context()  # the preload list the forkserver is started with
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(policy.filter(saved))
        forkserver.ensure_running()
    finally:
        os.environ.clear()
        os.environ.update(saved)


@dataclass
class TaskSlot:
    process: Any
    conn: Connection
    claim: Claim | None = None
    deadline: float | None = None  # monotonic
    timeout: float | None = None  # seconds, for the message
    confirmed: float = 0.0  # monotonic time the lease was last confirmed (claim, heartbeat)
    started: float = 0.0  # monotonic time the current try was handed to the child
    user: TaskUser | None = None  # the OS user the child runs as (None: the worker's)

    def kill(self) -> None:
        """Kill the task child, its process group and every process it started."""
        pid = self.process.pid
        if pid and self.process.exitcode is None:
            kill_tree(pid)
        elif pid:  # dead already: what is left of its process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        self.process.join(5)
        self.conn.close()


class TaskProcesses:
    """Starting, reusing and replacing the task processes (``Worker``'s idle and busy slots)."""

    _task_user: TaskUser | None = None  # task_user: every task process runs as it

    def _send_job(self, slot: TaskSlot, job: dict[str, Any]) -> None:
        """Send a try's job, then, for a process of a task user, its log file, opened
        here (that process never opens the state folder, which it cannot read). A
        process of the worker's own user opens its log itself, as it could anyway: in
        parallel with the others, off the worker's loop (15 % of the wide bench)."""
        if slot.user is None:
            slot.conn.send(job)
            return
        fd = open_try_log(job["log_file"])
        try:
            slot.conn.send(job | {"log_fd": True})
            send_handle(slot.conn, fd, slot.process.pid)
        finally:
            os.close(fd)

    def _spawn(self, user: TaskUser | None | bool = True) -> TaskSlot:
        """A new task process, as ``user`` (default: the worker's ``task_user``)."""
        who = self._task_user if user is True else user or None
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=task_child,
            args=(child, self._env_policy, who),
            daemon=True,
            name="task-runner",
        )
        process.start()
        child.close()
        return TaskSlot(process, parent, user=who)

    def _free_slot(self, user: TaskUser | None | bool = True) -> TaskSlot:
        """An idle task process running as ``user`` (default: ``task_user``); one of
        another user is ended to make room for a new one (issue 24: ``run_as_user``)."""
        who = self._task_user if user is True else user or None
        others: list[TaskSlot] = []
        found = None
        while self._idle:
            slot = self._idle.pop()
            if not slot.process.is_alive() or slot.conn.poll():
                # dead, or something spoke on the channel of an idle child: not to be trusted
                slot.kill()
            elif slot.user == who:
                found = slot
                break
            else:
                others.append(slot)
        if found is None and others:
            others.pop(0).kill()  # the number of processes stays worker_concurrency
        self._idle.extend(others)
        return found if found is not None else self._spawn(who)

    def _user_for(self, name: str | None) -> TaskUser | None:
        """The OS user a task's ``run_as_user`` names (None: ``task_user``); ConfigError
        when this worker cannot start a process as it, or it is root unasked."""
        if not name:
            return self._task_user
        user = resolve_task_user(name, "run_as_user")
        assert user is not None
        if user.uid == 0 and not self.settings.allow_root_tasks:
            raise ConfigError(f"run_as_user {name!r} is root (see --allow-root-tasks)")
        if os.geteuid() not in (0, user.uid):
            raise ConfigError(
                f"run_as_user {name!r}: the worker must run as root to start a task "
                f"process as another user (it runs as uid {os.geteuid()})"
            )
        return user

    def warm_up(self) -> None:
        """Start the task children now, so the first tries do not wait for them
        (``run_forever`` calls this before it registers and claims)."""
        while len(self._idle) + len(self._busy) < self.concurrency:
            self._idle.append(self._spawn())

    @property
    def running(self) -> int:
        return len(self._busy)


def outcome_of(message: Any, tag: tuple[int, int], pid: int | None) -> dict[str, Any] | None:
    """The outcome in a task child's reply, if it is the reply of that child (``pid``)
    for this try (``tag``); None for anything else (the protocol is broken)."""
    if (
        type(message) is tuple
        and len(message) == 3
        and message[0] == tag
        and message[1] == pid
        and type(message[2]) is dict
        and "ok" in message[2]
    ):
        return message[2]
    return None


def protocol_error(message: Any, pid: int | None) -> str:
    if isinstance(message, Exception):
        what = f"an unreadable message ({type(message).__name__}: {message})"
    elif type(message) is tuple and len(message) == 3 and message[1] != pid:
        what = f"a message from pid {message[1]!r}, not from the task process (pid {pid})"
    elif type(message) is tuple and len(message) == 3:
        what = f"a reply for another try ({message[0]!r})"
    else:
        what = f"a malformed message ({type(message).__name__})"
    return (
        f"the task process channel carried {what}: a process the task started (a fork?) "
        "wrote to it, so no outcome of this try can be trusted; the task process was "
        "killed and replaced"
    )


def describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"
