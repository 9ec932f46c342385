"""The DAG processor: imports DAG files in child processes and stores what they define.

Files are imported in child processes (a small pool per scan, see
:mod:`orchestrator.engine.parse_pool`) with a time limit per file, so a file that loops
forever, calls ``sys.exit``, crashes the interpreter or raises becomes an import error
record (file, message, traceback) and harms nothing else: the DAGs of every other
file, and the last good version of this one, keep being scheduled. Each file's result
is stored as soon as it is parsed (results that arrive together are written together,
a few transactions per half second, not a few per file), so a healthy DAG beside a
file that hangs until ``parse_timeout`` is schedulable within a second.

>>> DagProcessor(store, settings).scan(clock.now())   # doctest: +SKIP
ScanResult(parsed=3, dags=5, errors=1, removed=0)
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from orchestrator.authoring.loader import display_path
from orchestrator.authoring.template_files import signatures
from orchestrator.engine.parse_pool import ParsePool
from orchestrator.engine.start_environ import hide_start_environment
from orchestrator.engine.task_processes import mp_context, start_forkserver
from orchestrator.engine.task_user import resolve as resolve_task_user
from orchestrator.engine.taskenv import EnvPolicy
from orchestrator.settings import Settings
from orchestrator.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScanResult:
    parsed: int
    dags: int
    errors: int
    removed: int


def _files_now(paths: Any) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(f) for f in signatures(paths))


def dag_files(folder: str) -> list[str]:
    """Every ``.py`` file under ``folder``, skipping names that start with ``_`` or ``.``."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in files:
            if name.endswith(".py") and not name.startswith((".", "_")):
                found.append(os.path.abspath(os.path.join(root, name)))
    return sorted(found)


@dataclass
class _Scan:
    """What one scan knows and has not written yet.

    ``owners`` is the store's file -> dag_ids at the start of the scan; ``owner_of`` the
    dag_id -> file this scan believes now, updated as each file's result arrives.
    """

    owners: dict[str, list[str]]
    owner_of: dict[str, str]
    parsed: set[str] = field(default_factory=set)
    dags: int = 0
    errors: int = 0
    # the writes not made yet: flushed together every FLUSH_SECONDS, and at the end
    new_errors: list[tuple[str, str, str | None]] = field(default_factory=list)
    good: list[str] = field(default_factory=list)
    saves: list[dict[str, Any]] = field(default_factory=list)
    kept: dict[str, set[str]] = field(default_factory=dict)  # good file -> dag_ids it defines
    refused: dict[str, dict[str, Any]] = field(default_factory=dict)  # clashing file -> payload

    def unwritten(self) -> bool:
        return bool(self.new_errors or self.good)


class DagProcessor:
    """Parses the dags folder and stores what it defines (see the module docstring).

    ``on_stored`` is called after every write of new DAG versions or errors, so a
    scheduler can wake at once instead of when the whole scan ends.
    """

    FLUSH_SECONDS = 0.5  # results are written at most this long after they arrive
    POLL_SECONDS = 0.25

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        parallelism: int | None = None,
        on_stored: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.parallelism = parallelism or max(2, os.cpu_count() or 2)
        self.on_stored = on_stored
        self._seen: dict[str, tuple[Any, ...]] = {}
        # issue 25: file -> the template files its last parse read (or looked for)
        self._templates: dict[str, list[str]] = {}
        # file -> (dag_id, other file) for files refused because another file owns a dag_id
        self._clashes: dict[str, tuple[str, str]] = {}
        hide_start_environment()  # DAG files run as this user: /proc/<pid>/environ
        self._ctx = mp_context()
        start_forkserver(EnvPolicy.for_settings(settings))  # no secrets in its environ
        # issue 24: DAG files run user code too: imported as task_user when one is set
        # and this process may become it (root)
        user = resolve_task_user(settings.task_user)
        self._task_user = user if user is not None and os.geteuid() in (0, user.uid) else None

    def scan(
        self, now: datetime, *, force: bool = False, stop: threading.Event | None = None
    ) -> ScanResult:
        """Parse the new and changed files (every file if ``force``) and store each
        file's result as soon as it is known: a file that hangs until ``parse_timeout``
        delays no other file. While a slow file holds the scan, the folder is looked at
        again every ``parse_interval`` and files changed meanwhile are parsed too.
        Setting ``stop`` ends the scan early; files without a result yet are parsed
        again by the next scan."""
        files = self._files()
        owners = self.store.dags_by_file()
        scan = _Scan(owners, {dag_id: f for f, ids in owners.items() for dag_id in ids})
        changed = self._changed(files, scan.owner_of, force=force, busy=set())
        if changed:
            size = min(self.parallelism, len(changed))
            with ParsePool(
                self._ctx,
                size=size,
                timeout=self.settings.parse_timeout,
                root=self.settings.dags_folder,
                env_policy=EnvPolicy.for_settings(self.settings),
                user=self._task_user,
            ) as pool:
                pool.submit(changed)
                files = self._drain(pool, scan, files, now, stop)
        self._flush(scan, now)
        return ScanResult(
            parsed=len(scan.parsed),
            dags=scan.dags,
            errors=scan.errors,
            removed=self._forget_deleted(files, scan, now),
        )

    def _drain(
        self,
        pool: ParsePool,
        scan: _Scan,
        files: list[str],
        now: datetime,
        stop: threading.Event | None,
    ) -> list[str]:
        """Collect every result of ``pool`` into ``scan``, writing them as they come;
        returns the folder's files as last seen."""
        flushed = look = time.monotonic()
        while pool.busy:
            if stop is not None and stop.is_set():
                for path in pool.in_flight():
                    self._seen.pop(path, None)
                break
            for path, payload in pool.collect(self.POLL_SECONDS):
                self._accept(path, payload, scan)
            if time.monotonic() - flushed >= self.FLUSH_SECONDS or not pool.busy:
                self._flush(scan, now)
                flushed = time.monotonic()
            if not pool.busy:  # refused earlier for a dag_id that a parsed file gave up
                pool.submit(
                    [p for p in files if p not in scan.parsed and self._clash_resolved(p, scan)]
                )
            elif time.monotonic() - look >= self.settings.parse_interval:
                files, look = self._files(), time.monotonic()
                pool.submit(self._changed(files, scan.owner_of, busy=pool.in_flight()))
        return files

    def _files(self) -> list[str]:
        folder = self.settings.dags_folder
        return dag_files(folder) if os.path.isdir(folder) else []

    def _changed(
        self, files: list[str], owner_of: dict[str, str], *, busy: set[str], force: bool = False
    ) -> list[str]:
        """The files to parse: new or changed since last parsed (every one if ``force``),
        or refused for a clash that is resolved; not those in ``busy``."""
        changed = []
        for path in files:
            if path in busy:
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            sig = (st.st_mtime_ns, st.st_size, _files_now(self._templates.get(path, ())))
            if force or self._seen.get(path) != sig or self._clash_resolved_for(path, owner_of):
                changed.append(path)
                self._seen[path] = sig
        return changed

    def _accept(self, path: str, payload: dict[str, Any], scan: _Scan) -> None:
        """Judge one file's result and add the writes it implies to ``scan``."""
        scan.parsed.add(path)
        owner_of = scan.owner_of
        self._watch_templates(path, payload.get("template_files") or [])
        if "error" in payload:
            scan.errors += 1
            scan.new_errors.append((path, payload["error"], payload.get("traceback")))
            log.warning("import error: %s", payload["error"])
            return
        kept = {d["dag_id"] for d in payload["dags"]}
        for dag_id in scan.owners.get(path, []):  # a dag_id it dropped is free for another file
            if dag_id not in kept and owner_of.get(dag_id) == path:
                del owner_of[dag_id]
        clash = [
            (d["dag_id"], owner_of[d["dag_id"]])
            for d in payload["dags"]
            if owner_of.get(d["dag_id"], path) != path and os.path.exists(owner_of[d["dag_id"]])
        ]
        if clash:
            scan.errors += 1
            dag_id, other = clash[0]
            line = next(d["lineno"] for d in payload["dags"] if d["dag_id"] == dag_id)
            message = (
                f"{display_path(path)}:{line}: dag_id {dag_id!r} is already defined in "
                f"{display_path(other)}"
            )
            scan.new_errors.append((path, message, None))
            log.warning("import error: %s", message)
            self._clashes[path] = (dag_id, other)
            scan.refused[path] = payload
            return
        self._clashes.pop(path, None)
        scan.refused.pop(path, None)
        scan.good.append(path)
        scan.kept[path] = kept
        for data in payload["dags"]:
            scan.saves.append(data)
            owner_of[data["dag_id"]] = path
            scan.dags += 1

    def _watch_templates(self, path: str, files: list[Any]) -> None:
        """Parse ``path`` again when a template file it read (or looked for and did not
        find) changes (issue 25): its text is part of the DAG version. ``files``: each
        as the parse found it, ``(path, mtime, size)`` or ``(path,)``."""
        if files:
            self._templates[path] = [f[0] for f in files]
        else:
            self._templates.pop(path, None)
        seen = self._seen.get(path)
        if seen is not None:  # the DAG file as before the parse, its templates as read
            self._seen[path] = (*seen[:2], tuple(tuple(f) for f in files))

    def _flush(self, scan: _Scan, now: datetime) -> None:
        """Write what ``scan`` learned since the last flush, in a few transactions."""
        for path in [p for p in scan.refused if self._clash_resolved(p, scan)]:
            # the other file gave the dag_id up after this one was refused: judge again
            scan.errors -= 1
            scan.new_errors = [e for e in scan.new_errors if e[0] != path]
            self._accept(path, scan.refused.pop(path), scan)
        if not scan.unwritten():
            return
        try:
            self.store.record_import_errors(scan.new_errors, now)
            self.store.clear_import_errors(scan.good)
            self.store.save_dags(scan.saves, now)
        except BaseException:
            # not stored: these files must be parsed again by the next scan, even unchanged
            for path in [*scan.good, *(e[0] for e in scan.new_errors)]:
                self._seen.pop(path, None)
            raise
        for path in scan.good:
            gone = [  # ...unless another file took it over
                d
                for d in scan.owners.get(path, [])
                if d not in scan.kept[path] and scan.owner_of.get(d) in (None, path)
            ]
            self.store.deactivate_dags(gone, now, f"no longer defined in {display_path(path)}")
        scan.new_errors, scan.good, scan.saves = [], [], []
        if self.on_stored is not None:
            self.on_stored()

    def _forget_deleted(self, files: list[str], scan: _Scan, now: datetime) -> int:
        """Deactivate the DAGs of deleted files; returns how many."""
        present = set(files)
        removed = 0
        for f in [f for f in scan.owners if f not in present]:
            # a DAG another file took over in this scan is not the deleted file's any more
            still_owned = [d for d in scan.owners[f] if scan.owner_of.get(d) == f]
            self.store.deactivate_dags(still_owned, now, f"file {display_path(f)} was deleted")
            removed += len(still_owned)
            self._seen.pop(f, None)
        for f in [f for f in self._clashes if f not in present]:
            del self._clashes[f]
        stale_errors = [e.fileloc for e in self.store.import_errors() if e.fileloc not in present]
        self.store.clear_import_errors(stale_errors)
        return removed

    def _clash_resolved(self, path: str, scan: _Scan) -> bool:
        return self._clash_resolved_for(path, scan.owner_of)

    def _clash_resolved_for(self, path: str, owner_of: dict[str, str]) -> bool:
        """Whether a file refused for a dag_id clash should be parsed again: the other
        file no longer exists or no longer defines that dag_id."""
        clash = self._clashes.get(path)
        if clash is None:
            return False
        dag_id, other = clash
        return owner_of.get(dag_id) != other or not os.path.exists(other)
