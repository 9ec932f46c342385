"""Runtime task mapping (issue 14): one no-op task mapped over N items, on SQLite and
PostgreSQL. Run from the repository root::

    python bench/mapping.py                      # both backends, 10,000 items
    python bench/mapping.py --backend sqlite --items 2000 --json

It prints, per backend:

- ``end_to_end_s`` / ``instances_per_s``: from the trigger to the reducer's success
  (source -> N mapped no-op instances -> reducer), scheduler and one worker with
  standalone's defaults (``worker_concurrency``) in threads of this process, as
  ``orchestrator standalone`` runs them; target >= 1,000 instances/s on SQLite;
- ``expand_s``: one expansion of N instances (the transaction that turns the source's
  result into N queued task instances), timed on its own; target < 1 s;
- ``run_page_ms`` / ``grid_ms`` / ``instances_page_ms``: the run page, the DAG page
  (grid and graph) and the last page of the instance list of that run, server time
  (Flask's test client in this process, median of 5); target < 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (puts the repository root on sys.path)

from orchestrator.clock import SystemClock  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402

TARGETS = {
    ("sqlite", "instances_per_s"): (">=", 1000.0),
    ("sqlite", "expand_s"): ("<", 1.0),
    ("postgres", "expand_s"): ("<", 1.0),
    ("sqlite", "run_page_ms"): ("<", 300.0),
    ("sqlite", "grid_ms"): ("<", 300.0),
    ("postgres", "run_page_ms"): ("<", 300.0),
    ("postgres", "grid_ms"): ("<", 300.0),
}


def mapped_dag(items: int) -> str:
    return f"""
from orchestrator import DAG, task

with DAG("bench_mapping", schedule=None, params={{"n": {items}}}) as dag:
    @task
    def source(ctx):
        return list(range(ctx.params["n"]))

    @task
    def noop(ctx, item):
        return None

    @task
    def reduce(ctx):
        return len(ctx.upstream("noop"))

    noop.expand(item=source) >> reduce
"""


def _median_ms(fn, repeat: int = 5) -> float:  # noqa: ANN001
    fn()  # warm: specs, layouts and templates are cached after a first view
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _expand_once(store, items: int) -> float:  # noqa: ANN001
    """Time one expansion of ``items`` instances on a fresh run, its source succeeded."""
    from orchestrator.store.core import models as m
    from orchestrator.store.tasks.expansion import expand_locked

    now = SystemClock().now()
    run = store.trigger_run("bench_mapping", now, conf={"n": items})
    run = store.get_run(run.run_id)
    spec = store.spec("bench_mapping", run.version_hash)
    ti = m.task_instances
    with store.write() as conn:
        conn.execute(m.dag_runs.update().where(m.dag_runs.c.id == run.id).values(state="running"))
        conn.execute(
            ti.update()
            .where(ti.c.run_pk == run.id, ti.c.task_id == "source")
            .values(state="success", result=json.dumps(list(range(items))), end_date=now)
        )
    t0 = time.perf_counter()
    with store.write() as conn:
        made = expand_locked(conn, spec, run.id, ["noop"], now, store.max_map_length)
    elapsed = time.perf_counter() - t0
    if made != items:
        raise benchlib.BenchError(f"expanded {made} instances, expected {items}")
    store.cancel_run(run.run_id, SystemClock().now(), "bench: expansion timed")
    return elapsed


def _synthetic_run(store, items: int):  # noqa: ANN001, ANN202
    """A finished run of ``items`` mapped instances, each with one successful try,
    written straight to the store (``--pages-only``: the pages without the run's wait)."""
    from sqlalchemy import insert, select, update

    from orchestrator.store.core import models as m
    from orchestrator.store.tasks.expansion import expand_locked

    now = SystemClock().now()
    run = store.get_run(store.trigger_run("bench_mapping", now, conf={"n": items}).run_id)
    spec = store.spec("bench_mapping", run.version_hash)
    ti = m.task_instances
    with store.write() as conn:
        conn.execute(
            update(m.dag_runs)
            .where(m.dag_runs.c.id == run.id)
            .values(state="running", start_date=now)
        )
        conn.execute(
            update(ti)
            .where(ti.c.run_pk == run.id, ti.c.task_id == "source")
            .values(
                state="success", result=json.dumps(list(range(items))), end_date=now, try_number=1
            )
        )
        expand_locked(conn, spec, run.id, ["noop"], now, store.max_map_length)
        end = now + timedelta(seconds=30)
        conn.execute(
            update(ti)
            .where(ti.c.run_pk == run.id)
            .values(state="success", start_date=now, end_date=end, try_number=1)
        )
        rows = conn.execute(
            select(ti.c.id, ti.c.task_id, ti.c.map_index).where(ti.c.run_pk == run.id)
        ).all()
        conn.execute(
            insert(m.task_tries),
            [
                {
                    "ti_id": r.id,
                    "dag_id": run.dag_id,
                    "run_id": run.run_id,
                    "task_id": r.task_id,
                    "try_number": 1,
                    "worker": "bench",
                    "state": "success",
                    "start_date": now,
                    "end_date": end,
                    "map_index": r.map_index,
                }
                for r in rows
            ],
        )
        conn.execute(
            update(m.dag_runs)
            .where(m.dag_runs.c.id == run.id)
            .values(state="success", end_date=end)
        )
    return store.get_run(run.run_id)  # fmt: skip


def _pages(store, settings, run, items: int) -> dict[str, float]:  # noqa: ANN001
    from webui.app import create_app

    app = create_app(settings, store)  # loopback: no login, as standalone
    client = app.test_client()
    last = (items + 99) // 100

    def get(path: str):  # noqa: ANN202
        def call() -> None:
            response = client.get(path)
            if response.status_code != 200:
                raise benchlib.BenchError(f"GET {path}: {response.status_code}")

        return call

    return {
        "run_page_ms": _median_ms(get(f"/runs/{run.run_id}")),
        "grid_ms": _median_ms(get(f"/dags/bench_mapping?run_id={run.run_id}")),
        "instances_page_ms": _median_ms(
            get(f"/runs/{run.run_id}/tasks/noop/instances?page={last}")
        ),
    }


def measure(backend: str, url: str, workdir: str, args: argparse.Namespace) -> dict[str, float]:
    ns = argparse.Namespace(
        concurrency=Settings.load({}).worker_concurrency,  # standalone's default
        workers=1,
        mode="auto",  # threads on SQLite (standalone), processes on PostgreSQL
        timeout=args.timeout,
        profile=args.profile,
        profile_top=25,
        timeline=None,
    )
    ctx = benchlib.Context(backend, url, workdir, ns, benchlib.Profiles(args.profile))
    store, settings = benchlib.setup(ctx, "bench_mapping.py", mapped_dag(args.items))
    if args.pages_only:
        try:
            return {"expand_s": min(_expand_once(store, args.items) for _ in range(3))} | _pages(
                store, settings, _synthetic_run(store, args.items), args.items
            )
        finally:
            store.dispose()
    try:
        run, wall = benchlib.run_dag(ctx, store, settings, "bench_mapping", "mapping")
        n = sum(1 for t in store.task_instances(run.run_id) if t.task_id == "noop")
        if n != args.items:
            raise benchlib.BenchError(f"{n} mapped instances, expected {args.items}")
        if store.results(run.run_id, ["reduce"]) != {"reduce": str(args.items)}:
            raise benchlib.BenchError("the reducer did not see every instance")
        expand_s = min(_expand_once(store, args.items) for _ in range(3))
        return {
            "instances": float(n),
            "end_to_end_s": wall,
            "instances_per_s": n / wall,
            "expand_s": expand_s,
        } | _pages(store, settings, run, args.items)
    finally:
        store.dispose()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/mapping.py", description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["sqlite", "postgres", "all"], default="all")
    p.add_argument("--items", type=int, default=10_000, help="map items (default 10000)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per run (default 900)")
    p.add_argument("--pg-url", default=benchlib.DEFAULT_PG_URL, help="PostgreSQL admin URL")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--pages-only",
        action="store_true",
        help="skip the timed run: time the expansion and the pages of a finished run "
        "written straight to the store",
    )
    p.add_argument("--profile", metavar="DIR", help="cProfile the engine threads into DIR")
    args = p.parse_args(argv)
    backends = ["sqlite", "postgres"] if args.backend == "all" else [args.backend]
    results: dict[str, dict[str, float] | str] = {}
    for backend in backends:
        if backend == "postgres":
            problem = benchlib.pg_problem(args.pg_url)
            if problem:
                results[backend] = f"skipped: {problem}"
                continue
        try:
            with (
                tempfile.TemporaryDirectory(prefix="orch-bench-map-") as workdir,
                benchlib.fresh_database(backend, workdir, args.pg_url) as url,
            ):
                results[backend] = measure(backend, url, workdir, args)
        except benchlib.BenchError as exc:
            results[backend] = f"failed: {exc}"
        if not args.json:
            _print(backend, results[backend])
    if args.json:
        print(json.dumps(results, indent=2))
    return 1 if any(isinstance(v, str) and v.startswith("failed") for v in results.values()) else 0


def _print(backend: str, figures: dict[str, float] | str) -> None:
    print(f"{backend}:", flush=True)
    if isinstance(figures, str):
        print(f"  {figures}", flush=True)
        return
    for name, value in figures.items():
        target = TARGETS.get((backend, name))
        mark = ""
        if target:
            op, bound = target
            ok = value >= bound if op == ">=" else value < bound
            mark = f"   (target {op} {bound:g}: {'met' if ok else 'MISSED'})"
        print(f"  {name:20s} {value:12.3f}{mark}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
