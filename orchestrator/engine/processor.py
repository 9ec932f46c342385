"""The DAG processor: imports DAG files in child processes and stores what they define.

Files are imported in child processes (a small pool per scan, see
:mod:`orchestrator.engine.parse_pool`) with a time limit per file, so a file that loops
forever, calls ``sys.exit``, crashes the interpreter or raises becomes an import error
record (file, message, traceback) and harms nothing else: the DAGs of every other
file, and the last good version of this one, keep being scheduled. What a scan
learns is written in a few batched transactions, not a few per file.

>>> DagProcessor(store, settings).scan(clock.now())   # doctest: +SKIP
ScanResult(parsed=3, dags=5, errors=1, removed=0)
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.authoring.loader import display_path
from orchestrator.engine.parse_pool import ParsePool
from orchestrator.engine.taskenv import EnvPolicy
from orchestrator.engine.worker import mp_context
from orchestrator.settings import Settings
from orchestrator.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScanResult:
    parsed: int
    dags: int
    errors: int
    removed: int


def dag_files(folder: str) -> list[str]:
    """Every ``.py`` file under ``folder``, skipping names that start with ``_`` or ``.``."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in files:
            if name.endswith(".py") and not name.startswith((".", "_")):
                found.append(os.path.abspath(os.path.join(root, name)))
    return sorted(found)


class DagProcessor:
    def __init__(self, store: Store, settings: Settings, *, parallelism: int | None = None) -> None:
        self.store = store
        self.settings = settings
        self.parallelism = parallelism or max(2, os.cpu_count() or 2)
        self._seen: dict[str, tuple[int, int]] = {}
        # file -> (dag_id, other file) for files refused because another file owns a dag_id
        self._clashes: dict[str, tuple[str, str]] = {}
        self._ctx = mp_context()

    def scan(self, now: datetime, *, force: bool = False) -> ScanResult:
        folder = self.settings.dags_folder
        files = dag_files(folder) if os.path.isdir(folder) else []
        owners = self.store.dags_by_file()
        owner_of = {dag_id: f for f, ids in owners.items() for dag_id in ids}
        changed = []
        seen: dict[str, tuple[int, int]] = {}  # remembered once stored: a failed save retries
        for path in files:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            sig = (st.st_mtime_ns, st.st_size)
            if force or self._seen.get(path) != sig or self._clash_resolved(path, owner_of):
                changed.append(path)
                seen[path] = sig
        results = self._parse_all(changed)
        for path in changed:  # a dag_id a changed file dropped is free for another file
            if "dags" in results[path]:
                kept = {d["dag_id"] for d in results[path]["dags"]}
                for dag_id in owners.get(path, []):
                    if dag_id not in kept and owner_of.get(dag_id) == path:
                        del owner_of[dag_id]
        freed = [p for p in files if p not in results and self._clash_resolved(p, owner_of)]
        if freed:  # refused earlier for a dag_id that a changed file just gave up
            results.update(self._parse_all(freed))
            changed += freed
        n_dags = n_errors = 0
        errors: list[tuple[str, str, str | None]] = []
        good: list[str] = []
        saves: list[dict[str, Any]] = []
        for path in changed:
            payload = results[path]
            if "error" in payload:
                n_errors += 1
                errors.append((path, payload["error"], payload.get("traceback")))
                log.warning("import error: %s", payload["error"])
                continue
            clash = [
                (d["dag_id"], owner_of[d["dag_id"]])
                for d in payload["dags"]
                if owner_of.get(d["dag_id"], path) != path and os.path.exists(owner_of[d["dag_id"]])
            ]
            if clash:
                n_errors += 1
                dag_id, other = clash[0]
                line = next(d["lineno"] for d in payload["dags"] if d["dag_id"] == dag_id)
                message = (
                    f"{display_path(path)}:{line}: dag_id {dag_id!r} is already defined in "
                    f"{display_path(other)}"
                )
                errors.append((path, message, None))
                log.warning("import error: %s", message)
                self._clashes[path] = (dag_id, other)
                continue
            self._clashes.pop(path, None)
            good.append(path)
            for data in payload["dags"]:
                saves.append(data)
                owner_of[data["dag_id"]] = path
                n_dags += 1
        # the writes, batched: a few transactions per scan, not a few per file
        self.store.record_import_errors(errors, now)
        self.store.clear_import_errors(good)
        self.store.save_dags(saves, now)
        self._seen.update(seen)
        for path in good:
            kept = {d["dag_id"] for d in results[path]["dags"]}
            gone = [  # ...unless another file took it over in this scan
                d for d in owners.get(path, []) if d not in kept and owner_of.get(d) in (None, path)
            ]
            self.store.deactivate_dags(gone, now, f"no longer defined in {display_path(path)}")
        present = set(files)
        removed_files = [f for f in owners if f not in present]
        removed = 0
        for f in removed_files:
            # a DAG another file took over in this scan is not the deleted file's any more
            still_owned = [d for d in owners[f] if owner_of.get(d) == f]
            self.store.deactivate_dags(still_owned, now, f"file {display_path(f)} was deleted")
            removed += len(still_owned)
            self._seen.pop(f, None)
        for f in [f for f in self._clashes if f not in present]:
            del self._clashes[f]
        stale_errors = [e.fileloc for e in self.store.import_errors() if e.fileloc not in present]
        self.store.clear_import_errors(stale_errors)
        return ScanResult(parsed=len(changed), dags=n_dags, errors=n_errors, removed=removed)

    def _clash_resolved(self, path: str, owner_of: dict[str, str]) -> bool:
        """Whether a file refused for a dag_id clash should be parsed again: the other
        file no longer exists or no longer defines that dag_id."""
        clash = self._clashes.get(path)
        if clash is None:
            return False
        dag_id, other = clash
        return owner_of.get(dag_id) != other or not os.path.exists(other)

    def _parse_all(self, paths: list[str]) -> dict[str, dict[str, Any]]:
        if not paths:
            return {}
        size = min(self.parallelism, len(paths))
        with ParsePool(
            self._ctx,
            size=size,
            timeout=self.settings.parse_timeout,
            root=self.settings.dags_folder,
            env_policy=EnvPolicy.from_settings(
                self.settings.task_env_deny, self.settings.task_env_allow
            ),
        ) as pool:
            return pool.parse(paths)
