"""Web UI page timings on a big store: 100,000 runs and 1,000,000 task instances.

Bulk-loads a fresh database (SQLite file or a new PostgreSQL database), then times
the DAG list and a DAG's page (grid, graph, history) with the Flask test client:
server time only, no network. Target: well under 200 ms each.

    python bench/ui_pages.py                        # SQLite, 100k runs x 10 tasks
    python bench/ui_pages.py --backend postgres     # PostgreSQL on 127.0.0.1:5432
    python bench/ui_pages.py --runs 20000           # smaller, for a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, insert, text

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store import models as m
from orchestrator.store.db import upgrade
from webui import create_app

PG_ADMIN = os.environ.get(
    "ORCHESTRATOR_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
T0 = datetime(2020, 1, 1, tzinfo=UTC)
STATES = ["success"] * 8 + ["failed", "cancelled"]


def dag_data(dag_id: str, tasks: int) -> dict:
    with DAG(dag_id, schedule="0 * * * *", start_date=T0, tags=["bench"]) as dag:
        prev = None
        for i in range(tasks):
            t = task(lambda ctx: None, task_id=f"task_{i:02d}")
            if prev is not None and i % 3:
                prev >> t
            prev = t
    return serialize_dag(dag)


def load(store: Store, dags: int, runs: int, tasks: int) -> float:
    """Insert ``runs`` runs spread over ``dags`` DAGs, each with ``tasks`` task instances."""
    started = time.perf_counter()
    per_dag = runs // dags
    for d in range(dags):
        data = dag_data(f"bench_{d:02d}", tasks)
        store.save_dag(data, T0)
    versions = {d.dag_id: d.version_hash for d in store.list_dags()}
    run_pk = 0
    with store.write() as conn:
        for d in range(dags):
            dag_id = f"bench_{d:02d}"
            for chunk in range(0, per_dag, 5000):
                run_rows, ti_rows = [], []
                for i in range(chunk, min(chunk + 5000, per_dag)):
                    run_pk += 1
                    at = T0 + timedelta(hours=i)
                    state = STATES[i % len(STATES)]
                    run_id = f"{dag_id}__scheduled__{at:%Y%m%dT%H%M%S}Z"
                    run_rows.append(
                        {
                            "id": run_pk, "run_id": run_id, "dag_id": dag_id,
                            "version_hash": versions[dag_id], "run_type": "scheduled",
                            "logical_date": at, "data_interval_start": at - timedelta(hours=1),
                            "data_interval_end": at, "state": state, "conf": "{}",
                            "created_at": at, "start_date": at, "end_date": at + timedelta(minutes=3),
                        }
                    )  # fmt: skip
                    for t in range(tasks):
                        ti_rows.append(
                            {
                                "run_pk": run_pk, "dag_id": dag_id, "run_id": run_id,
                                "task_id": f"task_{t:02d}", "state": state, "try_number": 1,
                                "max_tries": 1, "queue": "default", "start_date": at,
                                "end_date": at + timedelta(minutes=1),
                            }
                        )  # fmt: skip
                conn.execute(insert(m.dag_runs), run_rows)
                conn.execute(insert(m.task_instances), ti_rows)
    if store.is_postgres:
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE"))
    else:
        with store.write() as conn:
            conn.execute(text("ANALYZE"))
    return time.perf_counter() - started


def time_page(client, path: str, repeat: int) -> dict:
    client.get(path)  # warm caches (spec parsing, compiled SQL)
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        response = client.get(path)
        samples.append((time.perf_counter() - t) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return {"path": path, "median_ms": round(statistics.median(samples), 1),
            "max_ms": round(max(samples), 1)}  # fmt: skip


def run(backend: str, runs: int, dags: int, tasks: int, repeat: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="orch_ui_bench_")
    admin = None
    if backend == "sqlite":
        url = f"sqlite:///{tmp}/bench.db"
    else:
        name = f"orch_bench_ui_{uuid.uuid4().hex[:8]}"
        admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    try:
        upgrade(url)
        store = Store(url)
        seconds = load(store, dags, runs, tasks)
        settings = Settings.load({}, cwd=tmp, database_url=url, state_dir=f"{tmp}/state")
        client = create_app(settings, store).test_client()
        pages = [
            "/",
            "/dags/bench_03",
            "/dags/bench_03?state=failed&page=40",
            "/api/v1/dags",
            "/api/v1/dags/bench_03/grid",
        ]
        timings = [time_page(client, p, repeat) for p in pages]
        store.dispose()
        return {"backend": backend, "runs": runs, "task_instances": runs * tasks,
                "load_seconds": round(seconds, 1), "pages": timings}  # fmt: skip
    finally:
        if admin is not None:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "all"], default="sqlite")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--dags", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    backends = ["sqlite", "postgres"] if args.backend == "all" else [args.backend]
    for backend in backends:
        result = run(backend, args.runs, args.dags, args.tasks, args.repeat)
        if args.json:
            print(json.dumps(result))
            continue
        print(f"{backend}: {result['runs']:,} runs, {result['task_instances']:,} task "
              f"instances loaded in {result['load_seconds']} s")  # fmt: skip
        for p in result["pages"]:
            print(f"  {p['path']:<42} median {p['median_ms']:>7} ms   max {p['max_ms']:>7} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
