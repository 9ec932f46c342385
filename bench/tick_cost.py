"""The scheduler's per-tick cost as history grows: 10k vs 1M historical task instances.

Builds a fresh SQLite database (or uses ``--database-url``), stores one DAG of 10
tasks, bulk-inserts finished runs with their task instances (one executemany per
chunk), keeps 5 active runs in flight, then times ``Scheduler.tick`` on a fake clock.
A flat tick cost means every tick query is bounded by active work, not by history.

    python bench/tick_cost.py                  # 10k and 1M historical task instances
    python bench/tick_cost.py --sizes 10000    # just one size
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from orchestrator.clock import FakeClock
from orchestrator.engine.processor import DagProcessor
from orchestrator.engine.scheduler import Scheduler
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.core.db import upgrade

TASKS = 10
DAG_FILE = """
from orchestrator import DAG, task

with DAG("bench", schedule=None, max_active_runs=5) as dag:
    prev = None
    for n in range(10):
        t = task(task_id=f"t{n}")(lambda: None)
        if prev is not None:
            prev >> t
        prev = t
"""
START = datetime(2020, 1, 1, tzinfo=UTC)


def fill(store: Store, history_tis: int, chunk_runs: int = 5000) -> None:
    dag = store.get_dag("bench")
    runs = history_tis // TASKS
    done = 0
    while done < runs:
        n = min(chunk_runs, runs - done)
        with store.write() as conn:
            rows = []
            for i in range(done, done + n):
                when = START + timedelta(minutes=i)
                rows.append({"run_id": f"bench__backfill__{i}", "dag_id": "bench",
                             "version_hash": dag.version_hash, "run_type": "backfill",
                             "logical_date": when, "data_interval_start": when,
                             "data_interval_end": when, "state": "success", "conf": "{}",
                             "created_at": when, "start_date": when, "end_date": when})  # fmt: skip
            conn.execute(insert(m.dag_runs), rows)
            first = conn.execute(
                m.dag_runs.select().with_only_columns(m.dag_runs.c.id)
                .where(m.dag_runs.c.run_id == f"bench__backfill__{done}")
            ).scalar_one()  # fmt: skip
            tis = [
                {"run_pk": first + (i - done), "dag_id": "bench", "run_id": f"bench__backfill__{i}",
                 "task_id": f"t{k}", "state": "success", "try_number": 1, "max_tries": 1,
                 "queue": "default", "start_date": START, "end_date": START}
                for i in range(done, done + n) for k in range(TASKS)
            ]  # fmt: skip
            conn.execute(insert(m.task_instances), tis)
        done += n


def measure(url: str | None, history_tis: int, ticks: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        dags = Path(tmp) / "dags"
        dags.mkdir()
        (dags / "bench.py").write_text(DAG_FILE)
        url = url or f"sqlite:///{tmp}/bench.db"
        upgrade(url)
        settings = Settings.load({}, cwd=tmp, database_url=url, dags_folder=str(dags))
        store = Store(url)
        clock = FakeClock(datetime(2030, 1, 1, tzinfo=UTC))
        DagProcessor(store, settings).scan(clock.now())
        t0 = time.perf_counter()
        fill(store, history_tis)
        filled = time.perf_counter() - t0
        for _ in range(5):
            store.trigger_run("bench", clock.advance(timedelta(seconds=1)))
        scheduler = Scheduler(store, clock, settings, scheduler_id="bench")
        scheduler.tick(clock.now())  # warm caches
        costs = []
        for _ in range(ticks):
            clock.advance(timedelta(seconds=1))
            t = time.perf_counter()
            scheduler.tick(clock.now())
            costs.append((time.perf_counter() - t) * 1000)
        store.dispose()
        return filled, statistics.median(costs), max(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    args = parser.parse_args()
    print(f"{'history TIs':>12} {'fill s':>8} {'tick median ms':>15} {'tick max ms':>12}")
    for size in (int(s) for s in args.sizes.split(",")):
        filled, median, worst = measure(args.database_url, size, args.ticks)
        print(f"{size:>12,} {filled:>8.1f} {median:>15.2f} {worst:>12.2f}", flush=True)


if __name__ == "__main__":
    main()
