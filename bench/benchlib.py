"""Baseline benchmarks for the orchestrator engine, on SQLite and PostgreSQL.

Entry point: ``bench/run.py``. Run from the repository root::

    python bench/run.py                                  # every backend, every scenario
    python bench/run.py --backend sqlite --scenario wide
    python bench/run.py --json                           # machine-readable results

Scenarios (see docs/benchmarks.md for what each one measures):

wide   1 -> 1000 parallel no-op tasks -> 1: wall time from trigger to run success and
       tasks per second, with the scheduler and a worker running in threads of this
       process on a system clock, woken by shared events (as ``standalone`` runs them).
chain  a 100-task chain: latency from an upstream task's code returning to its
       downstream task's code running, stamped inside the tasks (median, p95, max).
taskflow  the chain in the TaskFlow call style, a 1 KiB result passed as each call's
       argument (bench/taskflow_chain.py): the same latency.
raw    N independent task instances claimed one at a time and finished with
       ``store.claim`` + ``store.finish_success`` in a loop: the database's
       claim+complete transaction rate, with no scheduler, worker or processes.

Every scenario gets a fresh database (a SQLite file in a temporary folder, or a
PostgreSQL database ``orch_bench_<random>`` created on the admin URL and dropped
afterwards) and a fresh temporary dags folder. Each scenario is bounded by --timeout.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import logging
import os
import platform
import pstats
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as `python bench/run.py` without installing
    sys.path.insert(0, ROOT)

from sqlalchemy import create_engine, text  # noqa: E402

from orchestrator.clock import SystemClock  # noqa: E402
from orchestrator.engine.processor import DagProcessor  # noqa: E402
from orchestrator.engine.scheduler import Scheduler  # noqa: E402
from orchestrator.engine.wakeup import WakeEvent  # noqa: E402
from orchestrator.engine.worker import Worker  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from orchestrator.states import RUN_FINISHED, TaskState  # noqa: E402
from orchestrator.store import Store  # noqa: E402
from orchestrator.store.core.db import upgrade  # noqa: E402

DEFAULT_PG_URL = os.environ.get(
    "ORCHESTRATOR_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ("sqlite", "postgres")
SCENARIOS = ("wide", "chain", "taskflow", "catchup", "raw", "parse", "memory", "scale")

# Targets set by the performance issue: (comparison, value). None: no target yet.
TARGETS: dict[tuple[str, str], tuple[str, float]] = {
    ("wide", "tasks_per_s"): (">=", 400.0),
    ("chain", "latency_median_ms"): ("<=", 5.0),
    ("chain", "latency_p95_ms"): ("<=", 20.0),
    ("catchup", "wall_s"): ("<=", 2.0),
    ("parse", "scan_s_per_1000_files"): ("<=", 10.0),
    ("memory", "pss_mb"): ("<=", 250.0),
    ("ratio", "wide_vs_raw"): (">=", 0.25),
    # issue 28: engine rates over the database's raw limit measured in the same run
    ("vs_limits", "wide_vs_core_single"): (">=", 1.0),
    ("vs_limits", "wide_vs_core_4conn_single"): (">=", 0.75),
}


class BenchError(Exception):
    """A scenario could not complete (timeout, failed run, bad setup)."""


@dataclass
class Figure:
    backend: str
    scenario: str
    figure: str
    value: float | None
    unit: str
    target: str | None = None
    meets: bool | None = None
    note: str | None = None
    runs: list[float] | None = None  # every repeat's value; ``value`` is their median


def figure(backend: str, scenario: str, name: str, value: float, unit: str) -> Figure:
    fig = Figure(backend, scenario, name, value, unit)
    target = TARGETS.get((scenario, name))
    if target is not None:
        op, limit = target
        fig.target = f"{op} {limit:g}"
        fig.meets = value >= limit if op == ">=" else value <= limit
    return fig


# -- DAG files ----------------------------------------------------------------------------
def wide_dag(width: int) -> str:
    return textwrap.dedent(
        f"""
        from orchestrator import DAG, task


        def noop(ctx):
            return None


        with DAG("bench_wide", schedule=None) as dag:
            start = task(task_id="start")(noop)
            end = task(task_id="end")(noop)
            for i in range({width}):
                start >> task(task_id=f"mid_{{i:04d}}")(noop) >> end
        """
    )


def chain_dag(length: int) -> str:
    return textwrap.dedent(
        f"""
        import time

        from orchestrator import DAG, task


        def stamp(ctx):
            return time.time()  # when the task's code ran (the chain's latency is measured
            # between these, task to task, as a user would see it)


        with DAG("bench_chain", schedule=None) as dag:
            previous = None
            for i in range({length}):
                current = task(task_id=f"t_{{i:03d}}")(stamp)
                if previous is not None:
                    previous >> current
                previous = current
        """
    )


def flat_dag(count: int) -> str:
    return textwrap.dedent(
        f"""
        from orchestrator import DAG, task


        def noop(ctx):
            return None


        with DAG("bench_raw", schedule=None) as dag:
            for i in range({count}):
                task(task_id=f"t_{{i:05d}}")(noop)
        """
    )


# -- databases ----------------------------------------------------------------------------
def pg_problem(admin_url: str) -> str | None:
    """None if the PostgreSQL server answers, else the first line of the error."""
    try:
        engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text("select 1"))
        finally:
            engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


@contextlib.contextmanager
def fresh_database(backend: str, workdir: str, admin_url: str) -> Iterator[str]:
    """A migrated, empty database for one scenario; removed afterwards."""
    if backend == "sqlite":
        url = f"sqlite:///{os.path.join(workdir, 'bench.db')}"
        upgrade(url)
        yield url  # the file goes with workdir
        return
    name = f"orch_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = admin_url.rsplit("/", 1)[0] + "/" + name
            upgrade(url)
            yield url
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


# -- the engine in threads ----------------------------------------------------------------
class Broadcast:
    """An Event-like ``set()`` that sets several events (one per worker)."""

    def __init__(self, events: list[threading.Event]) -> None:
        self.events = events

    def set(self) -> None:
        for e in self.events:
            e.set()


class Profiles:
    """Optional per-thread cProfile collection (``--profile``)."""

    def __init__(self, folder: str | None) -> None:
        self.folder = folder
        self.stats: dict[str, cProfile.Profile] = {}

    def wrap(self, name: str, target: Callable[[], None]) -> Callable[[], None]:
        if not self.folder:
            return target

        def run() -> None:
            prof = cProfile.Profile()
            self.stats[name] = prof
            prof.enable()
            try:
                target()
            finally:
                prof.disable()

        return run

    def dump(self, label: str, top: int) -> None:
        if not self.folder:
            return
        os.makedirs(self.folder, exist_ok=True)
        for name, prof in self.stats.items():
            path = os.path.join(self.folder, f"{label}-{name}.prof")
            prof.dump_stats(path)
            out = io.StringIO()
            st = pstats.Stats(prof, stream=out)
            st.sort_stats("cumulative").print_stats(top)
            st.sort_stats("tottime").print_stats(top)
            with open(path[:-5] + ".txt", "w", encoding="utf-8") as fh:
                fh.write(out.getvalue())
            print(f"profile: {path} (+ .txt summary)", file=sys.stderr)
        self.stats.clear()


class Engine:
    """A scheduler and N workers on one store, in daemon threads of this process."""

    def __init__(
        self, store: Store, settings: Settings, workers: int, concurrency: int, profiles: Profiles
    ) -> None:
        clock = SystemClock()
        self.stop = threading.Event()
        self.sched_wake = threading.Event()
        self.worker_wakes = [WakeEvent() for _ in range(workers)]
        self.scheduler = Scheduler(
            store,
            clock,
            settings,
            scheduler_id="bench-scheduler",
            wake=self.sched_wake,
            on_release=Broadcast(self.worker_wakes),  # type: ignore[arg-type]
        )
        self.workers = [
            Worker(
                store,
                clock,
                settings,
                worker_id=f"bench-worker-{i}",
                concurrency=concurrency,
                wake=wake,
                on_finish=self.sched_wake,
            )
            for i, wake in enumerate(self.worker_wakes)
        ]
        self.threads = [
            threading.Thread(
                target=profiles.wrap("scheduler", lambda: self.scheduler.run_forever(self.stop)),
                name="bench-scheduler",
                daemon=True,
            )
        ] + [
            threading.Thread(
                target=profiles.wrap(f"worker{i}", lambda w=w: w.run_forever(self.stop)),
                name=f"bench-worker-{i}",
                daemon=True,
            )
            for i, w in enumerate(self.workers)
        ]

    def start(self, timeout: float = 60.0) -> None:
        """Start the threads; return once every worker has its task children and is
        registered (the engine is already running when a scenario starts timing)."""
        for t in self.threads:
            t.start()
        for w in self.workers:
            if not w.ready.wait(timeout):
                raise RuntimeError(f"worker {w.id} not ready after {timeout:g}s")

    def wake_scheduler(self) -> None:
        self.sched_wake.set()

    def close(self, timeout: float = 15.0) -> None:
        self.stop.set()
        self.sched_wake.set()
        for e in self.worker_wakes:
            e.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        alive = [t.name for t in self.threads if t.is_alive()]
        if alive:
            print(f"warning: threads still running after {timeout:g}s: {alive}", file=sys.stderr)
            for w in self.workers:  # at least stop the task processes
                with contextlib.suppress(Exception):
                    w.close()


# -- scenarios ----------------------------------------------------------------------------
@dataclass
class Context:
    backend: str
    url: str
    workdir: str
    args: argparse.Namespace
    profiles: Profiles


def setup(ctx: Context, filename: str, source: str) -> tuple[Store, Settings]:
    dags = os.path.join(ctx.workdir, "dags")
    os.makedirs(dags, exist_ok=True)
    with open(os.path.join(dags, filename), "w", encoding="utf-8") as fh:
        fh.write(source)
    settings = Settings.load(
        {},  # ignore ORCHESTRATOR_* in the environment: the bench is reproducible
        cwd=ctx.workdir,
        database_url=ctx.url,
        dags_folder=dags,
        state_dir=os.path.join(ctx.workdir, "state"),
        worker_concurrency=ctx.args.concurrency,
        parse_timeout=120,
    )
    store = Store(settings.database_url)
    result = DagProcessor(store, settings).scan(SystemClock().now())
    if result.errors or result.dags != 1:
        errors = "; ".join(e.message for e in store.import_errors())
        store.dispose()
        raise BenchError(f"parsing {filename} failed: {result} {errors}")
    return store, settings


def uses_processes(ctx: Context) -> bool:
    """Separate scheduler and worker processes (PostgreSQL), or threads (SQLite)?"""
    mode = ctx.args.mode
    return mode == "processes" or (mode == "auto" and ctx.backend == "postgres")


def start_engine(ctx: Context, store: Store, settings: Settings) -> Any:
    """The engine as the backend's deployment runs it, started and idle."""
    if uses_processes(ctx):
        from procs import ProcessEngine

        engine: Any = ProcessEngine(
            store, settings, ctx.args.workers, ctx.args.concurrency, ctx.workdir
        )
        engine.start()
        return engine
    engine = Engine(store, settings, ctx.args.workers, ctx.args.concurrency, ctx.profiles)
    engine.start()
    time.sleep(0.2)  # let the threads register and go idle
    return engine


def run_dag(ctx: Context, store: Store, settings: Settings, dag_id: str, label: str) -> Any:
    """Trigger one run with the engine running; return (run, wall seconds)."""
    engine = start_engine(ctx, store, settings)
    try:
        clock = SystemClock()
        triggered = clock.now()
        run = store.trigger_run(dag_id, triggered)
        engine.wake_scheduler()
        deadline = time.monotonic() + ctx.args.timeout
        while True:
            run = store.get_run(run.run_id)
            if run.state in RUN_FINISHED:
                break
            if time.monotonic() > deadline:
                counts = Counter(t.state for t in store.task_instances(run.run_id))
                raise BenchError(
                    f"{ctx.backend}/{label}: run {run.run_id} still {run.state} after "
                    f"{ctx.args.timeout:g}s (--timeout); task states: {dict(counts)}"
                )
            time.sleep(0.02)
    finally:
        engine.close()
        ctx.profiles.dump(f"{ctx.backend}-{label}", ctx.args.profile_top)
    if run.state != "success":
        counts = Counter(t.state for t in store.task_instances(run.run_id))
        raise BenchError(f"{ctx.backend}/{label}: run ended {run.state}; tasks: {dict(counts)}")
    wall = (run.end_date - triggered).total_seconds()
    if ctx.args.timeline:
        write_timeline(ctx.args.timeline, f"{ctx.backend}-{label}", store, run, triggered)
    return run, wall


def write_timeline(folder: str, label: str, store: Store, run: Any, triggered: Any) -> None:
    """One CSV row per task instance: ms after the trigger of its start and end."""
    tis = sorted(store.task_instances(run.run_id), key=lambda t: t.start_date)
    rows = [(t.task_id, t.ready_at, t.start_date, t.end_date) for t in tis]
    rows.append(("#run", None, run.start_date, run.end_date))
    write_csv_timeline(folder, label, "task_id,ready_ms,start_ms,end_ms", rows, triggered)


def write_csv_timeline(
    folder: str, label: str, header: str, rows: list[tuple], origin: Any
) -> None:
    """``DIR/label.csv``: each row's name, then its times as ms after ``origin``."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{label}.csv")
    rel = lambda t: "" if t is None else f"{(t - origin).total_seconds() * 1000:.2f}"  # noqa: E731
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(header + "\n")
        for name, *times in rows:
            fh.write(",".join([str(name), *map(rel, times)]) + "\n")
    print(f"timeline: {path}", file=sys.stderr)


def scenario_wide(ctx: Context) -> list[Figure]:
    width = ctx.args.width
    store, settings = setup(ctx, "bench_wide.py", wide_dag(width))
    try:
        run, wall = run_dag(ctx, store, settings, "bench_wide", "wide")
        tis = store.task_instances(run.run_id)
    finally:
        store.dispose()
    n = len(tis)
    if n != width + 2 or any(t.state != TaskState.SUCCESS for t in tis):
        raise BenchError(f"{ctx.backend}/wide: expected {width + 2} successful tasks")
    b = ctx.backend
    return [
        figure(b, "wide", "tasks", n, "tasks"),
        figure(b, "wide", "wall_s", wall, "s"),
        figure(b, "wide", "tasks_per_s", n / wall, "tasks/s"),
    ]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def scenario_chain(ctx: Context) -> list[Figure]:
    length = ctx.args.length
    store, settings = setup(ctx, "bench_chain.py", chain_dag(length))
    try:
        run, wall = run_dag(ctx, store, settings, "bench_chain", "chain")
        tis = {t.task_id: t for t in store.task_instances(run.run_id)}
        order = [f"t_{i:03d}" for i in range(length)]
        results = store.results(run.run_id, order)
    finally:
        store.dispose()
    # the latency: from an upstream task's code returning to its downstream task's code
    # running, both stamped inside the tasks (time.time(), one machine): the upstream's
    # result going back to the worker, the transaction that records it and claims the
    # downstream, the hand-off to a task process and its setup. (The stored end_date and
    # start_date are stamped inside the worker's transaction and would show much less.)
    ran = {t: float(results[t]) for t in order}
    gaps = [(ran[down] - ran[up]) * 1000 for up, down in zip(order, order[1:], strict=False)]
    durations = [(tis[t].end_date - tis[t].start_date).total_seconds() * 1000 for t in order]
    b = ctx.backend
    return [
        figure(b, "chain", "tasks", length, "tasks"),
        figure(b, "chain", "wall_s", wall, "s"),
        figure(b, "chain", "latency_median_ms", statistics.median(gaps), "ms"),
        figure(b, "chain", "latency_p95_ms", percentile(gaps, 95), "ms"),
        figure(b, "chain", "latency_max_ms", max(gaps), "ms"),
        figure(b, "chain", "task_median_ms", statistics.median(durations), "ms"),
    ]


def scenario_raw(ctx: Context) -> list[Figure]:
    count = ctx.args.raw_count
    store, settings = setup(ctx, "bench_raw.py", flat_dag(count))
    profiles = ctx.profiles
    try:
        clock = SystemClock()
        run = store.trigger_run("bench_raw", clock.now())
        scheduler = Scheduler(store, clock, settings, scheduler_id="bench-raw")
        scheduler.tick(clock.now())  # start the run and release every task
        queued = sum(t.state == TaskState.QUEUED for t in store.task_instances(run.run_id))
        if queued != count:
            raise BenchError(f"{ctx.backend}/raw: expected {count} queued tasks, got {queued}")
        lease = timedelta(seconds=settings.lease_seconds)
        done = 0

        def loop() -> None:
            nonlocal done
            deadline = time.monotonic() + ctx.args.timeout
            while True:
                now = clock.now()
                claims = store.claim("bench-raw-worker", now, lease, limit=1)
                if not claims:
                    return
                if not store.finish_success(claims[0], None, clock.now()):
                    raise BenchError(f"{ctx.backend}/raw: finish_success was fenced out")
                done += 1
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"{ctx.backend}/raw: {done}/{count} claim+finish pairs after "
                        f"{ctx.args.timeout:g}s (--timeout)"
                    )

        start = time.perf_counter()
        profiles.wrap("main", loop)()
        elapsed = time.perf_counter() - start
        profiles.dump(f"{ctx.backend}-raw", ctx.args.profile_top)
        if done != count:
            raise BenchError(f"{ctx.backend}/raw: finished {done} of {count} tasks")
    finally:
        store.dispose()
    b = ctx.backend
    return [
        figure(b, "raw", "pairs", count, "claim+finish"),
        figure(b, "raw", "wall_s", elapsed, "s"),
        figure(b, "raw", "pairs_per_s", count / elapsed, "claim+finish/s"),
        figure(b, "raw", "transactions_per_s", 2 * count / elapsed, "txn/s"),
    ]


def scenario_catchup(ctx: Context) -> list[Figure]:
    from catchup import run_catchup  # noqa: PLC0415 - keeps this module's size in check

    return run_catchup(ctx)


def aggregate(repeats: list[list[Figure]]) -> list[Figure]:
    """One figure per name: the median over the repeats, with every value kept."""
    out = []
    for i, first in enumerate(repeats[0]):
        values = [r[i].value for r in repeats]
        fig = figure(
            first.backend, first.scenario, first.figure, statistics.median(values), first.unit
        )
        fig.runs = values
        out.append(fig)
    return out


RUNNERS: dict[str, Callable[[Context], list[Figure]]] = {
    "wide": scenario_wide,
    "chain": scenario_chain,
    "catchup": scenario_catchup,
    "raw": scenario_raw,
    # in their own modules (bench/parse_speed.py, memory.py, scale.py), imported on use
    "parse": lambda ctx: __import__("parse_speed").scenario(ctx),
    "memory": lambda ctx: __import__("memory").scenario(ctx),
    "scale": lambda ctx: __import__("scale").scenario(ctx),
    "taskflow": lambda ctx: __import__("taskflow_chain").scenario(ctx),  # issue 25
}


def ratio_figures(backend: str, figures: list[Figure]) -> list[Figure]:
    """wide tasks/s over raw transactions/s, when both ran on ``backend`` in this run."""
    by = {(f.scenario, f.figure): f.value for f in figures if f.backend == backend}
    wide, raw = by.get(("wide", "tasks_per_s")), by.get(("raw", "transactions_per_s"))
    if not wide or not raw:
        return []
    return [figure(backend, "ratio", "wide_vs_raw", wide / raw, "x")]


# the limit each engine rate is held against (issue 28's targets): SQLAlchemy Core's
# single-row claim+complete on SQLite, its 4-connection single-row rate on PostgreSQL
LIMIT_OF = {"sqlite": "core_single", "postgres": "core_4conn_single"}
RATE_FIGURES = (("wide", "tasks_per_s"), ("raw", "pairs_per_s"))


def limit_figures(backend: str, figures: list[Figure], args: Any) -> list[Figure]:
    """The raw limits of ``backend`` measured now, and each engine rate of this run
    over the reference limit (``limits`` figures, then ``vs_limits`` ratios)."""
    import limits as raw_limits  # bench/ is on the path (bench/run.py)

    print(f"running {backend}/limits ...", file=sys.stderr, flush=True)
    measured = raw_limits.measure(backend, args.limits_count, args.pg_url)
    out = [figure(backend, "limits", name, rate, "tasks/s") for name, rate in measured.items()]
    reference = measured[LIMIT_OF[backend]]
    by = {(f.scenario, f.figure): f.value for f in figures if f.backend == backend}
    for scenario, name in RATE_FIGURES:
        value = by.get((scenario, name))
        if value:
            ratio = figure(backend, "vs_limits", f"{scenario}_vs_{LIMIT_OF[backend]}",
                           value / reference, "x")  # fmt: skip
            ratio.note = f"{value:.0f} / {reference:.0f} tasks/s"
            out.append(ratio)
    return out


# -- machine and output -------------------------------------------------------------------
def machine_info(admin_url: str, pg_ok: bool) -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "postgres": None,
    }
    with contextlib.suppress(Exception):
        commit = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        info["commit"] = commit or None
    if pg_ok:
        with contextlib.suppress(Exception):
            engine = create_engine(admin_url)
            try:
                with engine.connect() as conn:
                    info["postgres"] = conn.execute(text("show server_version")).scalar()
            finally:
                engine.dispose()
    return info


def fmt_value(f: Figure) -> str:
    if f.value is None:
        return "-"
    if f.unit in ("tasks", "claim+finish") and float(f.value).is_integer():
        return f"{f.value:.0f}"
    if f.unit == "s":
        return f"{f.value:.3f}"
    if f.unit == "ms" or f.unit == "x":
        return f"{f.value:.2f}"
    return f"{f.value:.1f}"


def print_table(figures: list[Figure], info: dict[str, Any]) -> None:
    print(
        f"machine: {info['nproc']} cpu ({info['cpu']}), Python {info['python']}, "
        f"SQLite {info['sqlite']}, PostgreSQL {info['postgres'] or 'n/a'}"
        + (f", commit {info['commit']}" if info.get("commit") else "")
    )
    rows = [("backend", "scenario", "figure", "value", "unit", "target", "status", "range")]
    for f in figures:
        status = "" if f.meets is None else ("meets" if f.meets else "MISSES")
        if f.note:
            status = f.note
        spread = ""
        if f.runs and len(f.runs) > 1 and min(f.runs) != max(f.runs):
            lo = Figure(f.backend, f.scenario, f.figure, min(f.runs), f.unit)
            hi = Figure(f.backend, f.scenario, f.figure, max(f.runs), f.unit)
            spread = f"{fmt_value(lo)} .. {fmt_value(hi)} (n={len(f.runs)})"
        rows.append(
            (f.backend, f.scenario, f.figure, fmt_value(f), f.unit, f.target or "-", status, spread)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, r in enumerate(rows):
        cells = [
            c.rjust(w) if i == 3 and n else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python bench/run.py",
        description="Baseline benchmarks: wide fan-out, chain latency, raw claim+finish rate.",
    )
    p.add_argument("--backend", choices=[*BACKENDS, "all"], default="all")
    p.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    p.add_argument("--workers", type=int, default=1, help="workers (default 1)")
    p.add_argument(
        "--mode",
        choices=["auto", "threads", "processes"],
        default="auto",
        help="scheduler and workers as threads of this process (standalone) or as "
        "'orchestrator scheduler'/'worker' processes; auto: threads on SQLite, "
        "processes on PostgreSQL",
    )
    p.add_argument("--catchup-runs", type=int, default=720, help="missed runs in 'catchup'")
    p.add_argument("--parse-files", type=int, default=1000, help="DAG files in 'parse'")
    p.add_argument("--memory-dags", type=int, default=100, help="DAG files in 'memory'")
    p.add_argument(
        "--scale-sizes",
        default="10000,1000000",
        help="historical task instances in 'scale', smallest first (default 10000,1000000)",
    )
    p.add_argument("--scale-ticks", type=int, default=30, help="scheduler ticks timed per size")
    p.add_argument(
        "--concurrency", type=int, default=8, help="task processes per worker (default 8)"
    )
    p.add_argument("--width", type=int, default=1000, help="parallel tasks in 'wide'")
    p.add_argument("--length", type=int, default=100, help="tasks in 'chain' and 'taskflow'")
    p.add_argument("--raw-count", type=int, default=1000, help="claim+finish pairs in 'raw'")
    p.add_argument(
        "--timeout", type=float, default=300.0, help="seconds one scenario may take (default 300)"
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each scenario N times (fresh database each) and report the median",
    )
    p.add_argument("--pg-url", default=DEFAULT_PG_URL, help="PostgreSQL admin URL")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.add_argument("--profile", metavar="DIR", help="cProfile each engine thread into DIR")
    p.add_argument("--timeline", metavar="DIR", help="write each run's task timings as CSV")
    p.add_argument("--profile-top", type=int, default=25, help=argparse.SUPPRESS)
    p.add_argument("-v", "--verbose", action="store_true", help="engine logs at INFO")
    p.add_argument(
        "--vs-limits",
        action="store_true",
        help="also measure the database's raw claim+complete limits (bench/limits.py) in "
        "this run and print each engine rate beside them, with the ratio (issue 28)",
    )
    p.add_argument("--limits-count", type=int, default=2000, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for name in ("workers", "concurrency", "width", "length", "raw_count", "repeat"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.length < 2:
        p.error("--length must be >= 2")

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(threadName)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    backends = list(BACKENDS) if args.backend == "all" else [args.backend]
    scenarios = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    problem = pg_problem(args.pg_url) if "postgres" in backends else None
    info = machine_info(args.pg_url, "postgres" in backends and problem is None)
    profiles = Profiles(args.profile)

    figures: list[Figure] = []
    failures: list[str] = []
    for backend in backends:
        if backend == "postgres" and problem:
            msg = f"PostgreSQL not reachable at {args.pg_url}: {problem}"
            if args.backend == "postgres":
                failures.append(msg)
            for sc in scenarios:
                figures.append(Figure(backend, sc, "-", None, "", note=f"skipped: {msg}"))
            print(f"skipping postgres: {msg}", file=sys.stderr)
            continue
        for sc in scenarios:
            repeats: list[list[Figure]] = []
            for n in range(args.repeat):
                print(
                    f"running {backend}/{sc}"
                    + (f" ({n + 1}/{args.repeat})" if args.repeat > 1 else "")
                    + " ...",
                    file=sys.stderr,
                    flush=True,
                )
                workdir = tempfile.mkdtemp(prefix=f"orch-bench-{backend}-{sc}-")
                try:
                    with fresh_database(backend, workdir, args.pg_url) as url:
                        ctx = Context(backend, url, workdir, args, profiles)
                        repeats.append(RUNNERS[sc](ctx))
                except Exception as exc:  # noqa: BLE001 - report it, go on with the rest
                    if isinstance(exc, BenchError):
                        msg = str(exc)
                    else:
                        first = (str(exc).strip().splitlines() or [""])[0][:300]
                        msg = f"{backend}/{sc}: {type(exc).__name__}: {first}"
                        if args.verbose:
                            traceback.print_exc()
                    failures.append(msg)
                    figures.append(Figure(backend, sc, "-", None, "", note=f"FAILED: {msg}"))
                    print(
                        f"error: {msg}" + ("" if args.verbose else " (-v: traceback)"),
                        file=sys.stderr,
                    )
                    break
                finally:
                    shutil.rmtree(workdir, ignore_errors=True)
            else:
                figures += repeats[0] if args.repeat == 1 else aggregate(repeats)
        figures += ratio_figures(backend, figures)
        if args.vs_limits:
            figures += limit_figures(backend, figures, args)

    if args.json:
        out = {
            "machine": info,
            "settings": {
                "workers": args.workers,
                "concurrency": args.concurrency,
                "width": args.width,
                "length": args.length,
                "raw_count": args.raw_count,
                "catchup_runs": args.catchup_runs,
                "mode": args.mode,
                "repeat": args.repeat,
            },
            "results": [asdict(f) for f in figures],
            "failures": failures,
        }
        print(json.dumps(out, indent=2))
    else:
        print_table(figures, info)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
