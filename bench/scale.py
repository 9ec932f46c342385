"""Flat as history grows: scheduler tick and DAG page time at 10k vs 1M task instances.

For each size, a fresh database gets two DAGs of 10 tasks: ``scale_hourly``
(``@hourly``, the one with the history: one finished scheduled run per past hour,
bulk-inserted) and ``scale_manual`` (manual only). Five triggered runs of each stay
active. Then, on a fake clock just after the last historical hour:

- the scheduler: median of ``--ticks`` calls of ``Scheduler.tick`` (a second apart);
- the alert watchdog: median of ``AlertWatchdog.check`` calls (it runs every few
  seconds next to the scheduler);
- the UI: median server time of ``/dags/scale_hourly`` (grid, graph, runs page) and
  its JSON grid, with the Flask test client.

Target: each figure at the largest size within 20% of the smallest (ratio <= 1.2).

    python bench/scale.py                               # 10,000 and 1,000,000, SQLite
    python bench/scale.py --sizes 10000,100000          # quicker
    python bench/scale.py --database-url postgresql+psycopg://postgres@127.0.0.1/x
    python bench/run.py --scenario scale --scale-sizes 10000,1000000
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

TASKS = 10
RATIO_TARGET = 1.2
START = datetime(2000, 1, 1, tzinfo=UTC)
DAG_FILE = """
from datetime import UTC, datetime

from orchestrator import DAG, task


def step(ctx):
    return None


for dag_id, schedule in (("scale_hourly", "@hourly"), ("scale_manual", None)):
    with DAG(dag_id, schedule=schedule, start_date=datetime(2000, 1, 1, tzinfo=UTC),
             max_active_runs=5, misfire="skip") as dag:
        prev = None
        for n in range(10):
            t = task(task_id=f"t{n}")(step)
            if prev is not None and n % 3:
                prev >> t
            prev = t
"""


def fill(store, history_tis: int, chunk_runs: int = 5000) -> datetime:  # noqa: ANN001
    """Bulk-insert finished hourly runs of scale_hourly; returns the last fire time."""
    from sqlalchemy import insert, select, text

    from orchestrator.store.core import models as m

    dag = store.get_dag("scale_hourly")
    runs = max(1, history_tis // TASKS)
    states = ["success"] * 8 + ["failed", "success"]
    done = 0
    while done < runs:
        n = min(chunk_runs, runs - done)
        with store.write() as conn:
            rows = []
            for i in range(done, done + n):
                at = START + timedelta(hours=i + 1)
                rows.append({"run_id": f"scheduled__{at:%Y%m%dT%H%M%S}", "dag_id": "scale_hourly",
                             "version_hash": dag.version_hash, "run_type": "scheduled",
                             "logical_date": at, "data_interval_start": at - timedelta(hours=1),
                             "data_interval_end": at, "state": states[i % 10], "conf": "{}",
                             "created_at": at, "start_date": at,
                             "end_date": at + timedelta(minutes=2)})  # fmt: skip
            conn.execute(insert(m.dag_runs), rows)
            ids = dict(
                conn.execute(
                    select(m.dag_runs.c.run_id, m.dag_runs.c.id).where(
                        m.dag_runs.c.run_id.in_([r["run_id"] for r in rows])
                    )
                ).all()
            )
            tis = [
                {"run_pk": ids[r["run_id"]], "dag_id": "scale_hourly", "run_id": r["run_id"],
                 "task_id": f"t{k}", "state": r["state"], "try_number": 1, "max_tries": 1,
                 "queue": "default", "start_date": r["start_date"], "end_date": r["end_date"]}
                for r in rows for k in range(TASKS)
            ]  # fmt: skip
            conn.execute(insert(m.task_instances), tis)
            if done + n >= runs:  # the schedule cursor: the next fire time after history
                last = START + timedelta(hours=runs)
                conn.execute(
                    m.dags.update()
                    .where(m.dags.c.dag_id == "scale_hourly")
                    .values(next_logical_date=last + timedelta(hours=1))
                )
        done += n
    if store.is_postgres:  # autovacuum would have analysed a table this size
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE"))
    # SQLite: nothing runs ANALYZE in a real deployment, so neither does the bench (its
    # average-only sqlite_stat1 makes "state = 'running'" look like a third of the table)
    return START + timedelta(hours=runs)


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of ``repeat`` calls, after one warm-up call."""
    fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


@contextlib.contextmanager
def database(url: str | None, admin_url: str | None, tmp: str) -> Iterator[str]:
    """A migrated empty database: a SQLite file, ``url`` as given, or a new PostgreSQL one."""
    from sqlalchemy import create_engine, text

    from orchestrator.store.core.db import upgrade

    if admin_url is None:
        url = url or f"sqlite:///{tmp}/scale.db"
        upgrade(url)
        yield url
        return
    name = f"orch_scale_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = admin_url.rsplit("/", 1)[0] + "/" + name
        upgrade(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def measure(url: str, workdir: str, history_tis: int, ticks: int) -> dict[str, float]:
    from orchestrator.clock import FakeClock
    from orchestrator.engine.processor import DagProcessor
    from orchestrator.engine.scheduler import Scheduler
    from orchestrator.engine.services import web_ui
    from orchestrator.observability.alerts.watchdog import AlertWatchdog
    from orchestrator.settings import Settings
    from orchestrator.store import Store

    create_app = web_ui().create_app

    dags = os.path.join(workdir, "dags")
    os.makedirs(dags, exist_ok=True)
    with open(os.path.join(dags, "scale.py"), "w", encoding="utf-8") as fh:
        fh.write(DAG_FILE)
    settings = Settings.load({}, cwd=workdir, database_url=url, dags_folder=dags,
                             state_dir=os.path.join(workdir, "state"))  # fmt: skip
    store = Store(url)
    try:
        clock = FakeClock(START)
        DagProcessor(store, settings).scan(clock.now())
        t0 = time.perf_counter()
        last = fill(store, history_tis)
        filled = time.perf_counter() - t0
        clock = FakeClock(last + timedelta(minutes=10))
        for dag_id in ("scale_hourly", "scale_manual"):
            for _ in range(5):
                store.trigger_run(dag_id, clock.advance(timedelta(seconds=1)))
        scheduler = Scheduler(store, clock, settings, scheduler_id="scale")

        def tick() -> None:
            scheduler.tick(clock.advance(timedelta(seconds=1)))

        tick_ms = timed(tick, ticks)
        watchdog = AlertWatchdog(store, settings)
        watchdog_ms = timed(lambda: watchdog.check(clock.now()), max(5, ticks // 5))
        client = create_app(settings, store).test_client()

        def page(path: str) -> Callable[[], None]:
            def get() -> None:
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)

            return get

        dag_page_ms = timed(page("/dags/scale_hourly"), 10)
        grid_api_ms = timed(page("/api/v1/dags/scale_hourly/grid"), 10)
        list_ms = timed(page("/"), 10)
    finally:
        store.dispose()
    return {"history_tis": history_tis, "fill_s": filled, "tick_ms": tick_ms,
            "watchdog_ms": watchdog_ms, "dag_page_ms": dag_page_ms, "grid_api_ms": grid_api_ms,
            "dag_list_ms": list_ms}  # fmt: skip


FIGURES = ("tick_ms", "watchdog_ms", "dag_page_ms", "grid_api_ms", "dag_list_ms")


def run_sizes(url: str | None, admin_url: str | None, sizes: list[int], ticks: int) -> list[dict]:
    out = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp, database(url, admin_url, tmp) as db:
            out.append(measure(db, tmp, size, ticks))
        print(f"  {size:>10,} history TIs: " + ", ".join(
            f"{k} {out[-1][k]:.1f}" for k in ("fill_s", *FIGURES)), file=sys.stderr)  # fmt: skip
    return out


def scenario(ctx) -> list:  # noqa: ANN001 - benchlib.Context
    """``bench/run.py --scenario scale``: each size on its own fresh database."""
    from benchlib import Figure, figure

    sizes = [int(s) for s in ctx.args.scale_sizes.split(",")]
    admin = ctx.args.pg_url if ctx.backend == "postgres" else None
    results = run_sizes(None, admin, sizes, ctx.args.scale_ticks)
    b, out = ctx.backend, []
    for r in results:
        n = r["history_tis"]
        out += [figure(b, "scale", f"{k}@{n}", r[k], "ms") for k in FIGURES]
    for k in FIGURES:
        ratio = results[-1][k] / results[0][k]
        fig = Figure(b, "scale", f"{k}_ratio_{sizes[-1]}_vs_{sizes[0]}", ratio, "x")
        fig.target, fig.meets = f"<= {RATIO_TARGET:g}", ratio <= RATIO_TARGET
        out.append(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,1000000", help="historical task instances")
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    parser.add_argument("--pg-admin-url", default=None, help="create a fresh PostgreSQL database")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = run_sizes(args.database_url, args.pg_admin_url, sizes, args.ticks)
    print(f"{'history TIs':>12} {'fill s':>7} " + " ".join(f"{k:>12}" for k in FIGURES))
    for r in results:
        print(f"{r['history_tis']:>12,} {r['fill_s']:>7.1f} "
              + " ".join(f"{r[k]:>12.2f}" for k in FIGURES))  # fmt: skip
    for k in FIGURES:
        ratio = results[-1][k] / results[0][k]
        status = "meets" if ratio <= RATIO_TARGET else "MISSES"
        print(f"{k}: {ratio:.2f}x from {sizes[0]:,} to {sizes[-1]:,} (target <= 1.2x): {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
