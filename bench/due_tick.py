"""One scheduler tick at N minutely DAGs: the tick that creates a minute's runs, and one
with nothing due, timed and counted (statements, commits), in one process (issue 29).

N DAG files (``--per-file`` DAGs each), every DAG a minutely cron (``misfire="skip"``,
``max_active_runs=1``) with one no-op task, are parsed into a fresh database. On a fake
clock, a first tick creates every DAG's first run; those runs are marked finished; then:

- **due tick**: the clock moves to just after the next minute, and ticks run until the
  scheduler has nothing left to do: every DAG's run created, started and its task
  queued. Printed: the ticks it took, the time, statements and commits in all, and the
  longest single tick (what the leader lease and SIGTERM wait for);
- **idle tick**: a second later, nothing is due: the time and statements of one tick
  (it must not grow with N).

``--profile`` prints the due tick's top functions by cumulative time (cProfile).

    python bench/due_tick.py --dags 2000
    python bench/due_tick.py --dags 10000 --database-url postgresql+psycopg://postgres@127.0.0.1/postgres
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from sqlalchemy import event, update  # noqa: E402

from bench.benchlib import fresh_database  # noqa: E402
from orchestrator.clock import FakeClock  # noqa: E402
from orchestrator.engine.processor import DagProcessor  # noqa: E402
from orchestrator.engine.scheduler import Scheduler  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from orchestrator.store import Store  # noqa: E402
from orchestrator.store.core import models as m  # noqa: E402

FILE = """
from datetime import UTC, datetime

from orchestrator import DAG, task


def noop():
    return None


for n in range({first}, {last}):
    with DAG(f"d{{n:05d}}", schedule="* * * * *", start_date=datetime(2030, 1, 1, tzinfo=UTC),
             misfire="skip", max_active_runs=1):
        task(task_id="t")(noop)
"""
START = datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC)


class Counter:
    def __init__(self, store: Store) -> None:
        self.statements = 0
        self.commits = 0
        event.listen(store.engine, "before_cursor_execute", self._stmt)
        event.listen(store.engine, "commit", self._commit)

    def _stmt(self, *args: object) -> None:
        self.statements += 1

    def _commit(self, *args: object) -> None:
        self.commits += 1

    def take(self) -> tuple[int, int]:
        out = (self.statements, self.commits)
        self.statements = self.commits = 0
        return out


def finish_everything(store: Store, now: datetime) -> None:
    with store.write() as conn:
        conn.execute(update(m.task_instances).values(state="success", end_date=now))
        conn.execute(update(m.dag_runs).values(state="success", end_date=now))


def until_idle(scheduler: Scheduler, now: datetime, limit: int = 1000) -> tuple[int, float, float]:
    ticks, worst, t0 = 0, 0.0, time.perf_counter()
    while ticks < limit:
        t = time.perf_counter()
        result = scheduler.tick(now)
        worst = max(worst, time.perf_counter() - t)
        ticks += 1
        if not result.busy:
            break
    return ticks, time.perf_counter() - t0, worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dags", type=int, default=2000)
    parser.add_argument("--per-file", type=int, default=100)
    parser.add_argument("--database-url", default=None, help="a PostgreSQL admin URL")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    backend = "postgresql" if args.database_url else "sqlite"
    with tempfile.TemporaryDirectory() as tmp:
        dags = Path(tmp) / "dags"
        dags.mkdir()
        for first in range(0, args.dags, args.per_file):
            last = min(first + args.per_file, args.dags)
            (dags / f"dags_{first:05d}.py").write_text(FILE.format(first=first, last=last))
        with fresh_database(backend, tmp, args.database_url or "") as url:
            settings = Settings.load({}, cwd=tmp, database_url=url, dags_folder=str(dags))
            store = Store(url)
            clock = FakeClock(START)
            t0 = time.perf_counter()
            DagProcessor(store, settings).scan(clock.now())
            parsed = time.perf_counter() - t0
            scheduler = Scheduler(store, clock, settings, scheduler_id="bench")
            until_idle(scheduler, clock.now())  # every DAG's first run
            finish_everything(store, clock.now())
            clock.advance(timedelta(seconds=30.5))  # 00:01:01: the next fire time is due
            counter = Counter(store)
            profiler = cProfile.Profile() if args.profile else None
            if profiler:
                profiler.enable()
            ticks, took, worst = until_idle(scheduler, clock.now())
            if profiler:
                profiler.disable()
            statements, commits = counter.take()
            with store.read() as conn:
                queued = conn.execute(
                    m.task_instances.select().where(m.task_instances.c.state == "queued")
                ).all()
            clock.advance(timedelta(seconds=1))
            t = time.perf_counter()
            scheduler.tick(clock.now())
            idle = time.perf_counter() - t
            idle_statements, idle_commits = counter.take()
            store.dispose()
    print(f"backend {backend}, {args.dags:,} minutely DAGs, parsed in {parsed:.1f} s")
    print(
        f"due:  {ticks} tick(s), {took * 1000:,.0f} ms in all, longest tick "
        f"{worst * 1000:,.0f} ms, {statements:,} statements, {commits:,} commits, "
        f"{len(queued):,} tasks queued"
    )
    print(f"idle: {idle * 1000:,.1f} ms, {idle_statements} statements, {idle_commits} commits")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
