"""Many minutely DAGs on real processes (issue 29): are each minute's runs on time?

Writes ``--dags`` DAG files (``--per-file`` DAGs each), every DAG a minutely cron
(``misfire="skip"``, ``max_active_runs=1``) with one no-op Python task, on a fresh
database: a PostgreSQL database made for the run on ``--database-url`` (the server's
admin URL) and dropped after it, or a SQLite file in a temporary folder. It starts
``--schedulers`` ``orchestrator scheduler`` and ``--workers`` ``orchestrator worker
--concurrency C`` processes (or one ``orchestrator standalone`` with ``--standalone``),
lets them run ``--minutes``, SIGTERMs each scheduler in turn (the leader first) and
times its exit, stops the workers, then reads the store:

- parse: when the bench (polling each second) saw the first DAG stored, and all of them,
  counted from the processes' start;
- runs: how many, and duplicates per (dag_id, logical_date) (must be 0);
- lateness: ``created_at`` minus the fire time (the logical date: for a cron the run's
  ``data_interval_end`` is the same instant, docs/concepts.md), each DAG's first run left
  out (it may stand for a fire time from before its DAG was parsed). ``created_at`` is
  the creating tick's ``now``, so the bench also counts each fire time's runs every
  0.2 s from the fire on (once all DAGs are stored) and reports when they were all
  committed, and the task's ``start_date`` minus the fire;
- finished: of those runs fired more than 60 s before the end, the share whose task
  ended within 60 s of the fire; task instances still ``scheduled``/``queued`` at the end;
- the schedulers: leader elections (``leader_acquired`` events), "tick outlasted half its
  lease" lines, and ERROR/CRITICAL/Traceback lines in every process's log.

Targets (issue 29): PostgreSQL, 2 schedulers, 2 workers, 10,000 DAGs; SQLite standalone,
2,000 DAGs: lateness p99 <= 1 s, >= 99 % finished within 60 s, SIGTERM exit <= 2 s.

    python bench/many_dags.py --dags 200 --minutes 1 --standalone
    python bench/many_dags.py --dags 2000 --schedulers 2 --workers 2 \\
        --database-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.dirname(os.path.abspath(__file__))
for path in (ROOT, BENCH):
    if path not in sys.path:
        sys.path.insert(0, path)

from many_dags_store import (  # noqa: E402 - bench/ on the path first
    MinuteWatch,
    Parsing,
    dag_count,
    leader_pid,
    read_figures,
    task_states,
    watch_summary,
)

LATENESS_P99_TARGET_S = 1.0
FINISHED_PCT_TARGET = 99.0
STOP_TARGET_S = 2.0
KILL_AFTER_S = 10.0
LEASE_WARNING = "tick outlasted half its lease"
TROUBLE = re.compile(r"\b(ERROR|CRITICAL)\b|^Traceback", re.MULTILINE)


def dag_file(first: int, count: int) -> str:
    """One file of ``count`` minutely DAGs, ``many_<first>`` onwards."""
    return textwrap.dedent(
        f"""
        from datetime import UTC, datetime

        from orchestrator import DAG, task


        def noop(ctx):
            return None


        for n in range({first}, {first + count}):
            with DAG(f"many_{{n:05d}}", schedule="* * * * *", misfire="skip",
                     max_active_runs=1, start_date=datetime(2026, 1, 1, tzinfo=UTC)) as dag:
                task(task_id="noop")(noop)
        """
    )


def write_dags(folder: str, dags: int, per_file: int) -> int:
    os.makedirs(folder, exist_ok=True)
    files = 0
    for first in range(0, dags, per_file):
        path = os.path.join(folder, f"many_{first:05d}.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(dag_file(first, min(per_file, dags - first)))
        files += 1
    return files


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: str
    stop_s: float | None = None
    killed: bool = False


@dataclass
class Cluster:
    """The processes of one run, started on ``url`` with their logs in ``workdir``."""

    url: str
    workdir: str
    dags_folder: str
    concurrency: int
    procs: list[Proc] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
        env.update(
            PYTHONPATH=os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p),
            ORCHESTRATOR_DATABASE_URL=self.url,
            ORCHESTRATOR_DAGS_FOLDER=self.dags_folder,
            ORCHESTRATOR_STATE_DIR=os.path.join(self.workdir, "state"),
            ORCHESTRATOR_WORKER_CONCURRENCY=str(self.concurrency),
            ORCHESTRATOR_PARSE_TIMEOUT="120",
            ORCHESTRATOR_ALLOW_ROOT_TASKS="1",  # the bench's no-op tasks, run as root
        )
        return env

    def spawn(self, name: str, *args: str) -> Proc:
        path = os.path.join(self.workdir, f"{name}.log")
        with open(path, "wb") as log:
            popen = subprocess.Popen(
                [sys.executable, "-m", "orchestrator", *args],
                env=self.env(),
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(name, popen, path)
        self.procs.append(proc)
        return proc

    def of(self, prefix: str) -> list[Proc]:
        return [p for p in self.procs if p.name.startswith(prefix)]

    def check_alive(self) -> None:
        for p in self.procs:
            if p.popen.poll() is not None and p.stop_s is None:
                raise RuntimeError(f"{p.name} exited with {p.popen.returncode}: see {p.log}")

    def stop(self, procs: list[Proc], kill_after: float) -> None:
        """SIGTERM ``procs`` together; each one's seconds to exit, SIGKILL past the limit."""
        started = time.monotonic()
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.popen.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.popen.wait(max(0.0, started + kill_after - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.killed = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.popen.pid, signal.SIGKILL)
                p.popen.wait(5)
            p.stop_s = time.monotonic() - started

    def kill_all(self) -> None:
        for p in self.procs:
            if p.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.popen.pid, signal.SIGKILL)
                p.popen.wait(5)


def log_figures(cluster: Cluster) -> dict[str, Any]:
    lease_warnings, trouble = 0, {}
    for p in cluster.procs:
        with open(p.log, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if p.name.startswith(("scheduler", "standalone")):
            lease_warnings += text.count(LEASE_WARNING)
        lines = [ln for ln in text.splitlines() if TROUBLE.search(ln)]
        if lines:
            trouble[p.name] = {"count": len(lines), "first": lines[0][:300]}
    return {"lease_warnings": lease_warnings, "log_trouble": trouble}


def run(args: argparse.Namespace, workdir: str, url: str) -> dict[str, Any]:
    from orchestrator.store import Store

    folder = os.path.join(workdir, "dags")
    files = write_dags(folder, args.dags, args.per_file)
    cluster = Cluster(url, workdir, folder, args.concurrency)
    store = Store(url)
    begun = time.monotonic()
    try:
        if args.standalone:
            cluster.spawn("standalone", "standalone", "--port", str(free_port()))
        else:
            for i in range(args.schedulers):
                cluster.spawn(f"scheduler{i}", "scheduler")
            for i in range(args.workers):
                cluster.spawn(f"worker{i}", "worker", "--concurrency", str(args.concurrency))
        window = args.minutes * 60
        next_note, seen, watch = 0.0, Parsing(), MinuteWatch()
        while (elapsed := time.monotonic() - begun) < window:
            cluster.check_alive()
            if seen.last_s is None:
                seen.saw(dag_count(store), args.dags, elapsed)
            watch.poll(store, datetime.now(UTC), seen.count, seen.last_s is not None)
            if elapsed >= next_note:
                states = task_states(store)
                print(f"  {elapsed:5.0f}s: {seen.count} DAGs stored, task instances "
                      f"{dict(sorted(states.items()))}", file=sys.stderr)  # fmt: skip
                next_note += 15
            pause = 0.2 if watch.open() else 1.0 - datetime.now(UTC).microsecond / 1e6
            time.sleep(max(0.01, min(pause, window - elapsed)))
        ended = datetime.now(UTC)
        at_end = task_states(store)
        schedulers = cluster.of("standalone") or cluster.of("scheduler")
        leader = leader_pid(store)
        schedulers.sort(key=lambda p: p.popen.pid != leader)  # the leader first
        for p in schedulers:  # one at a time: a standby takes over under the same load
            cluster.stop([p], KILL_AFTER_S)
        cluster.stop(cluster.of("worker"), 90.0)  # their drain_seconds is 60
        figures = read_figures(store, ended)
    finally:
        cluster.kill_all()
        store.dispose()
    figures.update(log_figures(cluster))
    figures.update(
        files=files,
        minutes=watch.figures(),
        **watch_summary(watch.figures()),
        parse_first_s=seen.first_s,
        parse_last_s=seen.last_s,
        parse_span_s=None if seen.last_s is None else seen.last_s - seen.first_s,
        still_scheduled=at_end.get("scheduled", 0),
        still_queued=at_end.get("queued", 0),
        task_states_at_end=at_end,
        scheduler_stops=[
            {
                "name": p.name,
                "leader": p.popen.pid == leader,
                "stop_s": p.stop_s,
                "killed": p.killed,
            }
            for p in schedulers
        ],
        worker_stops=[
            {"name": p.name, "stop_s": p.stop_s, "killed": p.killed} for p in cluster.of("worker")
        ],
    )
    return figures


def verdicts(f: dict[str, Any]) -> dict[str, bool | None]:
    def at_most(value: float | None, limit: float) -> bool | None:
        return None if value is None else value <= limit

    stops = [s["stop_s"] for s in f["scheduler_stops"] if not s["killed"]]
    killed = any(s["killed"] for s in f["scheduler_stops"])
    pct = f["finished_within_60s_pct"]
    return {
        "no_duplicates": f["duplicate_runs"] == 0,
        "lateness_p99": at_most(f["lateness_p99_s"], LATENESS_P99_TARGET_S),
        # the commit, not the stamp: every run of a minute committed within the target
        "all_visible": at_most(f["all_visible_max_s"], LATENESS_P99_TARGET_S)
        if not f["minutes_never_all_visible"]
        else False,
        "finished_within_60s": None if pct is None else pct >= FINISHED_PCT_TARGET,
        "scheduler_stop": False if killed else at_most(max(stops, default=None), STOP_TARGET_S),
    }


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}{unit}" if unit == " s" else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def print_table(setup: dict[str, Any], f: dict[str, Any], meets: dict[str, bool | None]) -> None:
    def status(key: str) -> str:
        return {None: "", True: "meets", False: "MISSES"}[meets[key]]

    print(", ".join(f"{k} {v}" for k, v in setup.items()))
    stops = ", ".join(
        f"{s['name']}{' (leader)' if s['leader'] else ''} "
        + ("killed after 10 s" if s["killed"] else f"{s['stop_s']:.2f} s")
        for s in f["scheduler_stops"]
    )
    workers = ", ".join(
        f"{s['name']} " + ("killed" if s["killed"] else f"{s['stop_s']:.2f} s")
        for s in f["worker_stops"]
    )
    rows = [
        ("DAGs stored", f"{f['dags_stored']} ({f['files']} files), "
         f"{f['import_errors']} import errors", ""),
        ("first / all DAGs stored after start",
         f"{fmt(f['parse_first_s'], ' s')} / {fmt(f['parse_last_s'], ' s')}", ""),
        ("parse, first to last", fmt(f["parse_span_s"], " s"), ""),
        ("runs (after each DAG's first)", f"{f['runs']} ({f['runs_after_first']})", ""),
        ("duplicate (dag_id, logical_date)", fmt(f["duplicate_runs"]), status("no_duplicates")),
        ("created_at - fire p50 / max",
         f"{fmt(f['lateness_p50_s'], ' s')} / {fmt(f['lateness_max_s'], ' s')}", ""),
        ("created_at - fire p99", fmt(f["lateness_p99_s"], " s"), status("lateness_p99")),
        ("a minute's runs all committed after (worst)",
         f"{fmt(f['all_visible_max_s'], ' s')} ({f['minutes_watched']} minutes watched, "
         f"{f['minutes_never_all_visible']} never all)", status("all_visible")),
        ("a minute's runs committed by 1 s (worst)", fmt(f["visible_at_1s_min_pct"], " %"), ""),
        ("task start - fire p50 / p99 / max",
         f"{fmt(f['task_start_p50_s'], ' s')} / {fmt(f['task_start_p99_s'], ' s')} / "
         f"{fmt(f['task_start_max_s'], ' s')}", ""),
        ("task ended within 60 s of fire",
         f"{fmt(f['finished_within_60s_pct'], ' %')} of {f['runs_due']} runs",
         status("finished_within_60s")),
        ("task instances scheduled / queued at end",
         f"{f['still_scheduled']} / {f['still_queued']}", ""),
        ("scheduler SIGTERM to exit", stops, status("scheduler_stop")),
        ("workers SIGTERM to exit", workers, ""),
        ("leader elections (changes of holder)",
         f"{f['leader_elections']} ({f['leader_changes']})", ""),
        (f'"{LEASE_WARNING}" lines', fmt(f["lease_warnings"]), ""),
    ]  # fmt: skip
    for name, trouble in f["log_trouble"].items():
        rows.append((f"{name} log: ERROR/Traceback lines", f"{trouble['count']}", trouble["first"]))
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name.ljust(width)}  {value}" + (f"  {note}" if note else ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python bench/many_dags.py", description=__doc__.splitlines()[0]
    )
    p.add_argument("--dags", type=int, default=2000, help="DAGs (default 2000)")
    p.add_argument("--per-file", type=int, default=1, help="DAGs per file (default 1)")
    p.add_argument("--schedulers", type=int, default=2, help="scheduler processes (default 2)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--concurrency", type=int, default=8, help="task processes per worker (8)")
    p.add_argument("--minutes", type=float, default=2.5, help="how long they run (default 2.5)")
    p.add_argument(
        "--database-url",
        default=None,
        help="a PostgreSQL server's admin URL: a fresh database is made on it for the run "
        "and dropped after; default: a SQLite file in a temporary folder",
    )
    p.add_argument(
        "--standalone",
        action="store_true",
        help="one 'orchestrator standalone' process instead of schedulers and workers",
    )
    p.add_argument("--keep", action="store_true", help="keep the folder (logs, SQLite file)")
    p.add_argument(
        "--json", action="store_true", help="print the figures as JSON (the table to stderr)"
    )
    args = p.parse_args(argv)
    for name in ("dags", "per_file", "schedulers", "workers", "concurrency"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.minutes <= 0:
        p.error("--minutes must be > 0")

    from benchlib import fresh_database

    backend = "postgres" if args.database_url else "sqlite"
    workdir = tempfile.mkdtemp(prefix="orch-many-dags-")
    setup = {
        "backend": backend,
        "dags": args.dags,
        "per_file": args.per_file,
        "processes": "standalone" if args.standalone else
        f"{args.schedulers} scheduler(s), {args.workers} worker(s)",
        "concurrency": args.concurrency,
        "minutes": args.minutes,
    }  # fmt: skip
    try:
        with fresh_database(backend, workdir, args.database_url or "") as url:
            figures = run(args, workdir, url)
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    meets = verdicts(figures)
    if args.json:  # the table goes to stderr then, for whoever watches
        with contextlib.redirect_stdout(sys.stderr):
            print_table(setup, figures, meets)
        print(json.dumps({"setup": setup, "figures": figures, "meets": meets}, indent=2))
    else:
        print_table(setup, figures, meets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
