"""The state folder is the orchestrator's alone: folders 0700, files 0600.

The SQLite file holds password and token hashes, the folder holds the secrets key, the
web UI secret and the try logs. Every orchestrator command starts with a umask of
``077`` (:func:`restrict_umask`), so whatever it creates is private, and ``db
upgrade``, ``db init`` and ``standalone`` tighten a folder made before (or by hand)
with a warning (:func:`tighten`). Task processes get the umask the command started
with back (:func:`task_umask`): what a task writes elsewhere keeps the usual modes.

>>> restrict_umask()                         # doctest: +SKIP
>>> tighten("/srv/orchestrator/.orchestrator")  # doctest: +SKIP
['/srv/orchestrator/.orchestrator/orchestrator.db']
"""

from __future__ import annotations

import logging
import os
import stat

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
_started_with: list[int] = []  # the umask before restrict_umask(), once


def restrict_umask() -> None:
    """Make every file and folder this process creates private to its user."""
    before = os.umask(PRIVATE_UMASK)
    if not _started_with:
        _started_with.append(before)


def task_umask() -> int:
    """The umask task processes run with: the one this process started with."""
    if _started_with:
        return _started_with[0]
    current = os.umask(PRIVATE_UMASK)
    os.umask(current)
    return current


def make_private_dir(path: str) -> None:
    """``os.makedirs`` with mode 0700 for every folder it creates (intermediate ones
    too, which ``os.makedirs`` would make by the umask), whatever the umask."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return
    make_private_dir(os.path.dirname(path))
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return  # made meanwhile by another process
    os.chmod(path, 0o700)


def tighten(state_dir: str, *, quiet: bool = False) -> list[str]:
    """Remove group and other permissions from the state folder and everything in it
    (symlinks are not followed, nor entries owned by another user changed); returns the
    paths changed, after logging a warning naming how many and a few of them (unless
    ``quiet``: for what this process has just created)."""
    if not os.path.isdir(state_dir):
        return []
    changed: list[str] = []
    me = os.geteuid()
    _private(state_dir, me, changed)
    for folder, dirs, files in os.walk(state_dir):  # symlinked folders are not entered
        for name in dirs + files:
            _private(os.path.join(folder, name), me, changed)
    if changed and not quiet:
        shown = ", ".join(changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        log.warning(
            "state folder %s: %d entries were readable by other users (%s); removed their "
            "group and other permissions (folders are now 0700, files 0600 or 0700)",
            state_dir,
            len(changed),
            shown,
        )
    return changed


def _private(path: str, me: int, changed: list[str]) -> None:
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode) or info.st_uid != me:
        return
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        try:
            os.chmod(path, mode & 0o700)
        except OSError:
            return
        changed.append(path)
