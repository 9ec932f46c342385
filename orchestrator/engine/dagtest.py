"""``orchestrator dags test DAG`` and ``dag.test()``: one whole run, here, on a throwaway store.

Airflow's ``dags test``: every task of one run of the DAG runs in this process tree,
with the real scheduling rules (trigger rules, mapping, retries, setup and teardown,
timeouts), and each task's state, duration and result are printed as it ends, then a
table. The run lives in a SQLite database in a temporary folder, deleted afterwards:
the real store is never written (its variables and connections are read, as a
worker would, only when a task asks for one). Exit status as ``tasks test``: 0 the run
succeeded, 1 it did not (the CLI answers 2 for bad arguments)::

    orchestrator dags test etl --conf '{"n": 3}' --logical-date 2026-03-29

    if __name__ == "__main__":        # at the bottom of a DAG file: python dags/etl.py
        dag.test()

The run is driven by the scheduler's ``tick`` and a worker with its task processes, as
in ``standalone``, minus creating scheduled runs; time is the wall clock, so a retry
waits for its ``retry_delay`` as it would in production.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from orchestrator.authoring.loader import read_source
from orchestrator.authoring.spec import DagSpec, serialize_dag
from orchestrator.clock import SystemClock
from orchestrator.engine.scheduler import Scheduler
from orchestrator.engine.secrets_chain import SecretsChain
from orchestrator.engine.worker import Worker
from orchestrator.errors import ConfigError
from orchestrator.settings import Settings
from orchestrator.states import RUN_FINISHED, TASK_FINISHED, RunState
from orchestrator.store import Store
from orchestrator.store.core.db import upgrade
from orchestrator.store.core.identity import sqlite_path

log = logging.getLogger(__name__)
RESULT_WIDTH = 60  # characters of a result or error in the table
_OPEN_TRY = ("running", "up_for_reschedule", "deferred")  # a try in these states has not ended


@dataclass(frozen=True)
class TaskOutcome:
    """One task instance of the tested run, as it ended."""

    task_id: str
    map_index: int
    state: str
    tries: int
    duration: float | None  # seconds, from the start of its last try to its end
    result: Any  # the decoded JSON result of a success, else None
    error: str | None

    @property
    def label(self) -> str:
        return self.task_id if self.map_index < 0 else f"{self.task_id}[{self.map_index}]"


@dataclass(frozen=True)
class DagTestResult:
    """What ``dag.test()`` returns: the run's state and every task instance's outcome."""

    dag_id: str
    run_id: str
    state: str
    tasks: tuple[TaskOutcome, ...]

    @property
    def exit_code(self) -> int:
        return 0 if self.state == RunState.SUCCESS else 1

    def task(self, label: str) -> TaskOutcome:
        """The outcome of ``"load"`` or ``"load[2]"``."""
        return next(t for t in self.tasks if t.label == label)


class _OneRun(Scheduler):
    """The scheduler of the throwaway store: it moves the one run on and creates none."""

    def schedule_dags(self, now: datetime) -> int:
        return 0


class _RealStoreCredentials:
    """Variables and connections from the real store, opened on the first lookup (so a
    test that looks none up never opens it) and only if it exists; nothing is written."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._store: Store | None = None
        self._tried = False

    def _open(self) -> Store | None:
        if not self._tried:
            self._tried = True
            try:
                self._store = Store(self.settings.database_url, settings=self.settings)
            except Exception as exc:  # noqa: BLE001 - then only env and backend answer
                log.warning("dags test: cannot read the store's variables: %s", exc)
        return self._store

    def get_variable(self, name: str, box: Any) -> Any:
        store = self._open()
        return None if store is None else _quiet(store.get_variable, name, box)

    def get_connection(self, name: str, box: Any) -> Any:
        store = self._open()
        return None if store is None else _quiet(store.get_connection, name, box)

    def dispose(self) -> None:
        if self._store is not None:
            self._store.dispose()


def _quiet(read: Any, name: str, box: Any) -> Any:
    try:
        return read(name, box)
    except Exception as exc:  # noqa: BLE001 - no schema, no such table: not found
        if exc.__class__.__name__ in ("SecretsKeyError",):
            raise
        log.warning("dags test: reading %r from the store failed: %s", name, exc)
        return None


def test_dag(
    dag: Any,
    settings: Settings | None = None,
    *,
    conf: dict[str, Any] | None = None,
    logical_date: datetime | None = None,
    out: TextIO | None = None,
    poll_seconds: float = 0.2,
) -> DagTestResult:
    """Run every task of one run of ``dag`` here (see the module docstring)."""
    from orchestrator.authoring.dag import _loading

    if _loading or multiprocessing.parent_process() is not None:
        raise ConfigError(
            f"dag.test() of {dag.dag_id!r} was called while its file was being imported "
            '(by a parse, a task or dags test): put it under `if __name__ == "__main__":`'
        )
    settings = settings or Settings.load()
    out = out or sys.stdout
    if logical_date is not None and logical_date.tzinfo is None:  # wall time in the DAG's zone
        logical_date = logical_date.replace(tzinfo=ZoneInfo(dag.timezone))
    clock = SystemClock()
    folder = tempfile.mkdtemp(prefix="orchestrator-dags-test-")
    # no SQLite file: no database to read (and no key file made for one)
    path = sqlite_path(settings.database_url)
    credentials = None if path and not os.path.exists(path) else _RealStoreCredentials(settings)
    try:
        here = _throwaway(settings, folder)
        store = Store(here.database_url, settings=here)
        try:
            with _engine_logs_quieter():
                return _run(dag, store, here, settings, credentials, clock, conf,
                            logical_date, out, poll_seconds)  # fmt: skip
        finally:
            store.dispose()
    finally:
        if credentials is not None:
            credentials.dispose()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _engine_logs_quieter() -> Iterator[None]:
    """The store's and engine's warnings about the tested run's failures and retries
    (``task_retry``, ``task_dead_lettered``) repeat what the report prints: kept back
    while the run goes, unless the logging level was lowered to see more."""
    top = logging.getLogger("orchestrator")
    if top.getEffectiveLevel() < logging.WARNING:
        yield
        return
    before = top.level
    top.setLevel(logging.ERROR)
    try:
        yield
    finally:
        top.setLevel(before)


def _throwaway(settings: Settings, folder: str) -> Settings:
    url = f"sqlite:///{os.path.join(folder, 'orchestrator.db')}"
    upgrade(url)
    # the state folder (the database's identity, task logs) is the throwaway one; the
    # virtualenv cache stays the user's (a built environment is reused, not the store)
    return settings.with_(database_url=url, state_dir=os.path.join(folder, "state"))


def _run(
    dag: Any,
    store: Store,
    here: Settings,
    settings: Settings,
    credentials: _RealStoreCredentials | None,
    clock: SystemClock,
    conf: dict[str, Any] | None,
    logical_date: datetime | None,
    out: TextIO,
    poll_seconds: float,
) -> DagTestResult:
    now = clock.now()
    path = os.path.abspath(dag.fileloc) if dag.fileloc else None
    data = serialize_dag(dag) | {"fileloc": path, "source": read_source(path) if path else None}
    store.save_dags([data], now)
    store.set_paused(dag.dag_id, False, now, who="dags test")
    run = store.trigger_run(
        dag.dag_id, now, conf=conf, logical_date=logical_date, triggered_by="dags test"
    )
    spec = store.spec(dag.dag_id, store.get_dag(dag.dag_id).version_hash)
    print(f"dags test {dag.dag_id}: run {run.run_id}, logical date "
          f"{run.logical_date.isoformat()}", file=out)  # fmt: skip
    scheduler = _OneRun(store, clock, here, scheduler_id="dags-test")
    secrets = SecretsChain(credentials, settings)
    worker = Worker(store, clock, here, worker_id="dags-test", secrets=secrets)
    reported: set[tuple[int, int]] = set()  # (ti id, try number) printed
    try:
        with _children_skip_the_script():
            while True:
                scheduler.tick(clock.now())
                busy = worker.tick(clock.now(), wait_seconds=poll_seconds)
                _report(store, here, run.run_id, reported, out)
                state = store.get_run(run.run_id).state
                if state in RUN_FINISHED:
                    break
                if not busy and not worker.running:
                    time.sleep(poll_seconds / 4)
    finally:
        worker.close()
    result = _result(store, spec, run.run_id, state)
    _table(result, out)
    return result


@contextlib.contextmanager
def _children_skip_the_script() -> Iterator[None]:
    """Task processes start from the forkserver and would import the script that called
    ``dag.test()`` as their ``__main__`` (running its top level again); named like a
    package's ``__main__`` for the while, it is skipped (as the CLI does for itself)."""
    import importlib.machinery

    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    main.__spec__ = importlib.machinery.ModuleSpec("orchestrator.__main__", None)
    try:
        yield
    finally:
        main.__spec__ = None


def _report(
    store: Store, here: Settings, run_id: str, reported: set[tuple[int, int]], out: TextIO
) -> None:
    """Print each try that ended since the last call, with its log (and each task
    instance that finished without a try: upstream_failed, skipped, failed expanding)."""
    tis = {t.id: t for t in store.task_instances(run_id)}
    ended = [x for x in store.tries(run_id) if x.state not in _OPEN_TRY]
    ended = [x for x in ended if (x.ti_id, x.try_number) not in reported]
    bare = [t for t in tis.values() if t.state in TASK_FINISHED and t.try_number == 0]
    bare = [t for t in bare if (t.id, 0) not in reported]
    if not ended and not bare:
        return
    results = store.instance_results(run_id)
    for x in sorted(ended, key=lambda x: (x.end_date or x.start_date, x.ti_id, x.try_number)):
        reported.add((x.ti_id, x.try_number))
        t = tis[x.ti_id]
        again = (
            " (to be retried)" if t.try_number > x.try_number or t.state == "up_for_retry" else ""
        )
        print(f"--- {_label(t)} try {x.try_number}: {x.state} in {_span(x)}{again}", file=out)
        if x.log_path:
            _print_log(os.path.join(here.log_dir, x.log_path), out)
        if x.state == "success" and t.state == "success":
            raw = results.get((t.task_id, t.map_index))
            print(f"    result: {_short('null' if raw is None else raw)}", file=out)
        elif x.error:
            print(f"    {_short(_last_line(x.error))}", file=out)
    for t in sorted(bare, key=lambda t: t.id):
        reported.add((t.id, 0))
        why = f": {_short(_last_line(t.error))}" if t.error else ""
        print(f"--- {_label(t)}: {t.state}{why}", file=out)


def _label(t: Any) -> str:
    return t.task_id if t.map_index < 0 else f"{t.task_id}[{t.map_index}]"


def _span(x: Any) -> str:
    return _seconds_of(_duration(x))


def _print_log(path: str, out: TextIO) -> None:
    with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            print("    | " + line.rstrip("\n"), file=out)


def _result(store: Store, spec: DagSpec, run_id: str, state: str) -> DagTestResult:
    order = {task_id: i for i, task_id in enumerate(spec.topological_order)}
    results = store.instance_results(run_id)
    last = {x.ti_id: x for x in store.tries(run_id)}  # oldest first: the last one stays
    outcomes = []
    for t in sorted(store.task_instances(run_id), key=lambda t: (order[t.task_id], t.map_index)):
        raw = results.get((t.task_id, t.map_index))
        outcomes.append(
            TaskOutcome(
                task_id=t.task_id,
                map_index=t.map_index,
                state=t.state,
                tries=t.try_number,
                duration=_duration(last.get(t.id)),
                result=None if raw is None else json.loads(raw),
                error=t.error,
            )
        )
    return DagTestResult(spec.dag_id, run_id, state, tuple(outcomes))


def _table(result: DagTestResult, out: TextIO) -> None:
    rows = [("task", "state", "tries", "duration", "result")]
    for t in result.tasks:
        shown = json.dumps(t.result) if t.state == "success" else _last_line(t.error or "")
        rows.append((t.label, t.state, str(t.tries), _seconds_of(t.duration), _short(shown)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print(file=out)
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4],
              file=out)  # fmt: skip
    print(f"\nrun {result.run_id}: {result.state}", file=out)


def _duration(x: Any) -> float | None:
    """A try's length in seconds (None: no try, or not ended)."""
    if x is None or x.start_date is None or x.end_date is None:
        return None
    return max((x.end_date - x.start_date).total_seconds(), 0.0)


def _seconds_of(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def _short(value: Any, width: int = RESULT_WIDTH) -> str:
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"
