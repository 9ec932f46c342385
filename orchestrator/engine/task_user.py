"""Task processes as another OS user (issue 24, item 1): ``task_user`` / ``run_as_user``.

A task runs code its DAG's author wrote. Run as the orchestrator's own OS user it could
read what that user can: the state folder (the secrets key, the web UI secret, the
SQLite file), ``/proc/<worker pid>/fd`` and ``environ``. With ``task_user`` set, the
worker (running as root) starts its task processes and the DAG processor its parse
processes as that user instead, as Airflow's ``run_as_user``, Kubernetes'
``runAsUser`` and systemd's ``DynamicUser`` do: right after the fork, before any user
code, the child drops every supplementary group, takes the user's group and then its
uid (:func:`become`), and gets the user's ``HOME``, ``USER``, ``LOGNAME`` and ``SHELL``.
The worker itself is made non-dumpable (:func:`protect_this_process`), so its
``/proc/<pid>`` files belong to root even for a task of its own user.

A worker running as root without a task user refuses to start (:func:`check_task_user`)
unless ``allow_root_tasks`` (``--allow-root-tasks``) says tasks may run as root, as
Celery refuses to run as root without ``C_FORCE_ROOT``.

>>> user = resolve("nobody")          # doctest: +SKIP
>>> become(user)                      # in the child, after the fork   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import ConfigError

_PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class TaskUser:
    name: str
    uid: int
    gid: int
    home: str
    shell: str


def resolve(name: str | None, what: str = "task_user") -> TaskUser | None:
    """The OS user ``name`` (a name or a numeric uid); None for None or ''.
    ConfigError if there is no such user."""
    if not name:
        return None
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except (KeyError, OverflowError):
        raise ConfigError(f"{what} {name!r}: no such OS user on this machine") from None
    return TaskUser(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir, entry.pw_shell)


def check_task_user(settings: Any, what: str = "worker") -> TaskUser | None:
    """The task user of ``settings`` for a process about to run tasks; ConfigError when
    tasks would run as root unasked, or as a user this process cannot become."""
    user = resolve(settings.task_user)
    me = os.geteuid()
    allow = bool(getattr(settings, "allow_root_tasks", False))
    if user is None and me == 0 and not allow:
        raise ConfigError(
            f"the {what} runs as root and task_user is not set: its tasks would run as "
            "root and could read the state folder (the secrets key, the web UI secret, "
            "the database). Set task_user (ORCHESTRATOR_TASK_USER) to an unprivileged "
            "OS user, or pass --allow-root-tasks (ORCHESTRATOR_ALLOW_ROOT_TASKS=1) to run "
            "them as root anyway"
        )
    if user is not None and user.uid == 0 and not allow:
        raise ConfigError(
            f"task_user {settings.task_user!r} is root: pick an unprivileged user, or pass "
            "--allow-root-tasks (ORCHESTRATOR_ALLOW_ROOT_TASKS=1)"
        )
    if user is not None and me not in (0, user.uid):
        raise ConfigError(
            f"task_user {user.name!r}: the {what} must run as root to start task processes "
            f"as another user (it runs as uid {me})"
        )
    return user


def become(user: TaskUser) -> None:
    """Turn this process (a fresh child, before any user code) into ``user`` for good;
    raises OSError if it cannot (the child must then not run the try)."""
    if os.geteuid() != user.uid:
        os.setgroups([])
        os.setgid(user.gid)
        os.setuid(user.uid)  # real, effective and saved: there is no way back
    if os.getuid() != user.uid or os.geteuid() != user.uid or os.getegid() != user.gid:
        raise OSError(f"could not become task user {user.name!r}")
    if user.uid != 0:
        try:
            os.setuid(0)
        except PermissionError:
            pass
        else:
            raise OSError(f"task user {user.name!r} could become root again")
    os.environ.update(HOME=user.home, USER=user.name, LOGNAME=user.name)
    os.environ["SHELL"] = user.shell or "/bin/sh"
    for folder in (user.home, "/"):
        with contextlib.suppress(OSError):
            os.chdir(folder)
            break
    set_dumpable(True)  # its own /proc/self is its own (setuid made it root's)


def set_dumpable(on: bool) -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0)


def protect_this_process() -> None:
    """``PR_SET_DUMPABLE`` 0: this process's ``/proc/<pid>`` files (environ, fd, mem)
    belong to root, so no process of the same user (a task without task_user) reads
    them; no core dumps. Its children that ``exec`` are dumpable again."""
    set_dumpable(False)
