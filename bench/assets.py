"""Asset latency (issue 15): from a producer task's success to its consumer's run.

A producer DAG's one task has ``outlets=[asset]``; a consumer DAG is scheduled on the
asset. With the engine running (threads on SQLite, as ``standalone`` runs it;
``orchestrator scheduler``/``worker`` processes on PostgreSQL), each round triggers one
producer run and waits for the consumer's run. The latency of a round is the consumer
run's stored ``created_at`` minus the producer task's stored ``end_date`` (its success,
the transaction that recorded the asset event). Target: median <= 1 s.

    python bench/assets.py                         # SQLite, 30 rounds
    python bench/assets.py --backend postgres --rounds 50
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from benchlib import (
    DEFAULT_PG_URL,
    BenchError,
    Context,
    Profiles,
    fresh_database,
    percentile,
    pg_problem,
    start_engine,
)
from sqlalchemy import select

from orchestrator.clock import SystemClock
from orchestrator.engine.processor import DagProcessor
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core import models as m

DAGS = """
from orchestrator import DAG, Asset, task

table = Asset("bench://warehouse/table")

with DAG("bench_producer", schedule=None) as producer:
    @task(outlets=[table])
    def load(ctx):
        ctx.outlet_event(table, extra={"rows": 1})

with DAG("bench_consumer", schedule=[table]) as consumer:
    @task
    def report(ctx):
        return len(ctx.triggering_asset_events)
"""
TARGET_MEDIAN_S = 1.0


def consumer_runs(store: Store) -> list:
    r = m.dag_runs
    with store.read() as conn:
        return conn.execute(
            select(r.c.run_id, r.c.created_at)
            .where(r.c.dag_id == "bench_consumer")
            .order_by(r.c.id)
        ).all()


def producer_end(store: Store, run_id: str):
    ti = m.task_instances
    with store.read() as conn:
        return conn.execute(
            select(ti.c.end_date).where(ti.c.run_id == run_id, ti.c.state == "success")
        ).scalar()


def run(backend: str, url: str, workdir: str, args: argparse.Namespace) -> list[float]:
    dags = os.path.join(workdir, "dags")
    os.makedirs(dags)
    with open(os.path.join(dags, "bench_assets.py"), "w", encoding="utf-8") as fh:
        fh.write(DAGS)
    settings = Settings.load(
        {}, cwd=workdir, database_url=url, dags_folder=dags,
        state_dir=os.path.join(workdir, "state"), worker_concurrency=args.concurrency,
    )  # fmt: skip
    store = Store(url)
    found = DagProcessor(store, settings).scan(SystemClock().now())
    if found.dags != 2 or found.errors:
        raise BenchError(f"parsing the bench DAGs failed: {found}")
    ctx = Context(backend, url, workdir, args, Profiles(None))
    latencies: list[float] = []
    engine = start_engine(ctx, store, settings)
    try:
        for i in range(args.rounds):
            before = len(consumer_runs(store))
            produced = store.trigger_run("bench_producer", SystemClock().now())
            engine.wake_scheduler()
            deadline = time.monotonic() + args.timeout
            while len(consumer_runs(store)) == before:
                if time.monotonic() > deadline:
                    raise BenchError(f"round {i}: no consumer run after {args.timeout:g}s")
                time.sleep(0.005)
            created = consumer_runs(store)[-1].created_at
            end = producer_end(store, produced.run_id)
            if end is None:
                raise BenchError(f"round {i}: the consumer ran before its producer succeeded")
            latencies.append((created - end).total_seconds())
    finally:
        engine.close()
        store.dispose()
    return latencies


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/assets.py", description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds one round may take")
    p.add_argument("--pg-url", default=DEFAULT_PG_URL)
    p.add_argument("--mode", choices=("auto", "threads", "processes"), default="auto")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=8)
    args = p.parse_args(argv)
    if args.backend == "postgres" and (problem := pg_problem(args.pg_url)):
        print(f"PostgreSQL not reachable at {args.pg_url}: {problem}", file=sys.stderr)
        return 1
    workdir = tempfile.mkdtemp(prefix=f"orch-bench-assets-{args.backend}-")
    try:
        with fresh_database(args.backend, workdir, args.pg_url) as url:
            latencies = run(args.backend, url, workdir, args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    median, p95 = statistics.median(latencies), percentile(latencies, 95)
    ok = "meets" if median <= TARGET_MEDIAN_S else "MISSES"
    print(f"assets ({args.backend}, {len(latencies)} rounds): producer success -> consumer run")
    print(
        f"  median {median * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
    )
    print(f"  target median <= {TARGET_MEDIAN_S:g} s: {ok}")
    return 0 if median <= TARGET_MEDIAN_S else 1


if __name__ == "__main__":
    sys.exit(main())
