"""The database's identity: noticing a SQLite file deleted or replaced under a running
process, and refusing to start on a fresh empty file where a database used to be.

A store pins the SQLite file it opened (an open descriptor and its device and inode).
:meth:`FilePin.check` (run before every write transaction and on every scheduler
tick) finds out when the file was unlinked, renamed away or replaced; from then on the
store refuses to write (:class:`DatabaseGoneError`), so nothing more is written to a
file nobody will ever read again, and the scheduler and ``/health`` say so loudly.

The state folder keeps a record (``databases.json``) of every SQLite database used
with it. A command that would create the database (``standalone``, ``db upgrade``,
any command opening the store) refuses when the file is missing but recorded: that is
a lost database, not a first start. ``orchestrator db init`` or ``standalone
--new-database`` start a new one on purpose.

>>> pin = FilePin("/srv/state/orchestrator.db")      # doctest: +SKIP
>>> pin.check()                                      # doctest: +SKIP
>>> refuse_lost_database("/srv/state", "sqlite:////srv/state/orchestrator.db")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import make_url

from orchestrator.errors import ConfigError, OrchestratorError

log = logging.getLogger(__name__)

RECORD_FILE = "databases.json"


class DatabaseGoneError(OrchestratorError):
    """The database file this process opened was deleted or replaced: writing stopped."""


def sqlite_path(url: str) -> str | None:
    """The absolute path of a SQLite database file URL, else None (PostgreSQL, memory)."""
    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - make_engine reports bad URLs
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:" or parsed.database.startswith("file:"):
        return None
    return os.path.abspath(parsed.database)


class FilePin:
    """The SQLite file a store opened, held by an open descriptor.

    ``check()`` returns None while the file at the path is still the one pinned, and
    a sentence saying what happened once it is not (deleted, moved away, replaced).
    The answer sticks: a database that went away does not come back by itself.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._problem: str | None = None
        self._lock = threading.Lock()
        self._pin()

    def _pin(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return  # not created yet: pinned at the next check after it is
        st = os.fstat(fd)
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)

    @property
    def problem(self) -> str | None:
        return self._problem

    def check(self) -> str | None:
        with self._lock:
            if self._problem is not None:
                return self._problem
            if self._fd is None:
                self._pin()
                return None
            problem = None
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                gone = os.fstat(self._fd).st_nlink == 0
                problem = f"the database file {self.path} was " + (
                    "deleted while in use" if gone else "moved away while in use"
                )
            else:
                if (st.st_dev, st.st_ino) != self._ident:
                    problem = f"the database file {self.path} was replaced by another file"
            if problem is not None:
                self._problem = problem
                log.critical(
                    "%s: this process stops writing to it (nothing more would be kept); "
                    "restore the file from a backup and restart, or start a new database "
                    "on purpose with 'orchestrator db init'",
                    problem,
                )
            return problem

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None


# -- the state folder's record ---------------------------------------------------------------
def _record_path(state_dir: str) -> str:
    return os.path.join(state_dir, RECORD_FILE)


def _load(state_dir: str) -> dict[str, Any]:
    try:
        with open(_record_path(state_dir)) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{_record_path(state_dir)}: unreadable ({exc})") from None
    databases = data.get("databases") if isinstance(data, dict) else None
    return databases if isinstance(databases, dict) else {}


def recorded(state_dir: str, url: str) -> dict[str, Any] | None:
    """What the state folder records of the SQLite database at ``url``, if anything."""
    path = sqlite_path(url)
    return None if path is None else _load(state_dir).get(path)


def record_database(state_dir: str, url: str, *, created: bool = False) -> None:
    """Note in the state folder that the SQLite database at ``url`` exists (idempotent).

    Processes starting together (a scheduler and a worker) may both write: the
    read-modify-write holds an exclusive lock on ``databases.json.lock``, and each
    writer replaces the record from a temporary file of its own, so neither loses the
    other's entry nor finds its temporary file gone."""
    path = sqlite_path(url)
    if path is None:
        return
    if not created and path in _load(state_dir):
        return  # recorded already: no lock, no write
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    with open(_record_path(state_dir) + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        databases = _load(state_dir)  # again, under the lock
        now = datetime.now(UTC).isoformat(timespec="seconds")
        entry = databases.get(path)
        if entry is not None and not created:
            return
        entry = {"first_used": now if entry is None or created else entry["first_used"]}
        if created:
            entry["created"] = now
        databases[path] = entry
        tmp = f"{_record_path(state_dir)}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"databases": databases}, f, indent=2, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, _record_path(state_dir))


def refuse_lost_database(state_dir: str, url: str) -> None:
    """Raise if the SQLite file at ``url`` is missing although the state folder records it.

    Creating a fresh empty database there would silently run again everything the
    lost one had recorded as done.
    """
    path = sqlite_path(url)
    if path is None or os.path.exists(path):
        return
    entry = recorded(state_dir, url)
    if entry is None:
        return
    raise ConfigError(
        f"the database {path} is missing, but {_record_path(state_dir)} records that it "
        f"existed (first used {entry.get('first_used', '?')}). Restore it from a backup; "
        "or, to start over with an empty database (every run and task recorded before is "
        "forgotten), run 'orchestrator db init' or 'orchestrator standalone --new-database'"
    )
