"""The ``catchup`` scenario: a paused hourly DAG with N missed fire times is unpaused.

``misfire="backfill"`` and ``max_active_runs=16``: every missed hour gets its run,
oldest first, at most 16 at a time. The figure is the wall time from unpausing to
the last run's success (its stored ``end_date``), with the engine already running.
"""

from __future__ import annotations

import textwrap
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from benchlib import (
    BenchError,
    Context,
    Figure,
    figure,
    setup,
    start_engine,
    write_csv_timeline,
)
from sqlalchemy import func, select

from orchestrator.clock import SystemClock
from orchestrator.store.core import models as m


def catchup_dag(start: datetime) -> str:
    return textwrap.dedent(
        f"""
        from datetime import datetime, timedelta
        from orchestrator import DAG, task


        def noop(ctx):
            return None


        with DAG(
            "bench_catchup",
            schedule="@hourly",
            timezone="UTC",
            start_date=datetime.fromisoformat("{start.replace(tzinfo=None).isoformat()}"),
            misfire="backfill",
            catchup_window=timedelta(days=365),
            max_active_runs=16,
            paused=True,
        ) as dag:
            task(task_id="only")(noop)
        """
    )


def run_catchup(ctx: Context) -> list[Figure]:
    count = ctx.args.catchup_runs
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    if datetime.now(UTC) - hour > timedelta(minutes=59, seconds=30):
        time.sleep(31)  # do not straddle an hour boundary: it would add a fire time
        hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    store, settings = setup(ctx, "bench_catchup.py", catchup_dag(hour - timedelta(hours=count - 1)))
    r = m.dag_runs
    try:
        engine = start_engine(ctx, store, settings)
        try:
            clock = SystemClock()
            unpaused = clock.now()
            store.set_paused("bench_catchup", False, unpaused)
            engine.wake_scheduler()
            deadline = time.monotonic() + ctx.args.timeout
            while True:
                with store.read() as conn:
                    states = dict(
                        conn.execute(
                            select(r.c.state, func.count())
                            .where(r.c.dag_id == "bench_catchup")
                            .group_by(r.c.state)
                        ).all()
                    )
                if states.get("success", 0) >= count or states.get("failed"):
                    break
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"{ctx.backend}/catchup: runs after {ctx.args.timeout:g}s: {states}"
                    )
                time.sleep(0.02)
        finally:
            engine.close()
            ctx.profiles.dump(f"{ctx.backend}-catchup", ctx.args.profile_top)
        with store.read() as conn:
            rows = conn.execute(
                select(r.c.state, r.c.created_at, r.c.start_date, r.c.end_date)
                .where(r.c.dag_id == "bench_catchup")
                .order_by(r.c.logical_date)
            ).all()
    finally:
        store.dispose()
    states = Counter(row.state for row in rows)
    if len(rows) != count or states["success"] != count:
        raise BenchError(f"{ctx.backend}/catchup: expected {count} successful runs: {states}")
    wall = (max(row.end_date for row in rows) - unpaused).total_seconds()
    if ctx.args.timeline:
        write_csv_timeline(
            ctx.args.timeline,
            f"{ctx.backend}-catchup",
            "run,created_ms,start_ms,end_ms",  # oldest first
            [(i, x.created_at, x.start_date, x.end_date) for i, x in enumerate(rows)],
            unpaused,
        )
    b = ctx.backend
    return [
        figure(b, "catchup", "runs", count, "tasks"),
        figure(b, "catchup", "wall_s", wall, "s"),
        figure(b, "catchup", "runs_per_s", count / wall, "runs/s"),
    ]
