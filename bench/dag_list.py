"""The DAG list with many DAGs (issue 27 item 7): 10,000 DAGs, a few runs each, then the
list's pages timed with the Flask test client (server time only, no network).
Target: every page under 300 ms (filters, sorts, a late page).

    python bench/dag_list.py                       # SQLite
    python bench/dag_list.py --backend postgres    # PostgreSQL on 127.0.0.1:5432
    python bench/dag_list.py --dags 2000           # a quick look

The DAGs are bulk-inserted (one saved through the store, its rows copied for the rest
with their own dag_id), so loading takes seconds, not the DAG processor's minutes. It
prints figures and asserts no times (a loaded machine is slower, not wrong).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sqlalchemy import create_engine, insert, select, text  # noqa: E402

from bench.ui_pages import PG_ADMIN, T0, dag_data, time_page  # noqa: E402
from orchestrator.engine.services import web_ui  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from orchestrator.store import Store  # noqa: E402
from orchestrator.store.core import models as m  # noqa: E402
from orchestrator.store.core.db import upgrade  # noqa: E402

create_app = web_ui().create_app
STATES = ["success", "success", "failed", "running", "success", "cancelled"]
PAGES = [
    "/",
    "/?state=failed",
    "/?state=running",
    "/?state=paused",
    "/?sort=last_run&order=desc",
    "/?sort=next_run",
    "/?sort=last_run&state=failed&page=20",
    "/?page=200",
    "/?per_page=200&page=3",
    "/?q=dag_09",
    "/?owner=team_07",
    "/?sort=owner&order=desc&page=30",
    "/api/v1/dags?per_page=50&page=10",
]


def load(store: Store, dags: int, runs: int) -> float:
    started = time.perf_counter()
    store.save_dag(dag_data("dag_00000", 4), T0)
    d, v, r = m.dags, m.dag_versions, m.dag_runs
    with store.write() as conn:
        dag_row = dict(conn.execute(select(d)).mappings().one())
        version = dict(conn.execute(select(v)).mappings().one())
        version.pop("id")
        dag_rows, version_rows, run_rows = [], [], []
        for i in range(dags):
            dag_id = f"dag_{i:05d}"
            if i:
                dag_rows.append(
                    dag_row | {"dag_id": dag_id, "is_paused": i % 10 == 0,
                               "owners": json.dumps([f"team_{i % 50:02d}"]),
                               "next_logical_date": T0 + timedelta(minutes=(i * 7919) % dags)}
                )  # fmt: skip
                data = json.loads(version["data"]) | {"dag_id": dag_id}
                version_rows.append(version | {"dag_id": dag_id, "data": json.dumps(data)})
            for k in range(runs):
                at = T0 + timedelta(hours=k, minutes=i % 60)
                state = STATES[(i + k) % len(STATES)]
                run_rows.append(
                    {"run_id": f"{dag_id}__scheduled__{k}", "dag_id": dag_id,
                     "version_hash": version["hash"], "run_type": "scheduled",
                     "logical_date": at, "data_interval_start": at - timedelta(hours=1),
                     "data_interval_end": at, "state": state, "conf": "{}", "created_at": at,
                     "start_date": at, "end_date": at + timedelta(minutes=3)}
                )  # fmt: skip
        for rows, table in ((dag_rows, d), (version_rows, v), (run_rows, r)):
            for i in range(0, len(rows), 2000):
                conn.execute(insert(table), rows[i : i + 2000])
    analyze = "ANALYZE"
    if store.is_postgres:
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(analyze))
    else:
        with store.write() as conn:
            conn.execute(text(analyze))
    return time.perf_counter() - started


def run(backend: str, dags: int, runs: int, repeat: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="orch_list_bench_")
    admin = name = None
    if backend == "sqlite":
        url = f"sqlite:///{tmp}/bench.db"
    else:
        name = f"orch_bench_list_{uuid.uuid4().hex[:8]}"
        admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    try:
        upgrade(url)
        store = Store(url)
        seconds = load(store, dags, runs)
        settings = Settings.load({}, cwd=tmp, database_url=url, state_dir=f"{tmp}/state")
        client = create_app(settings, store).test_client()
        timings = [time_page(client, p, repeat) for p in PAGES]
        store.dispose()
        return {"backend": backend, "dags": dags, "runs": dags * runs,
                "load_seconds": round(seconds, 1), "pages": timings}  # fmt: skip
    finally:
        if admin is not None:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--dags", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="runs per DAG")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    result = run(args.backend, args.dags, args.runs, args.repeat)
    print(f"{result['backend']}: {result['dags']} DAGs, {result['runs']} runs "
          f"(loaded in {result['load_seconds']} s)")  # fmt: skip
    for page in result["pages"]:
        print(f"  {page['path']:<42} median {page['median_ms']:>7} ms  max {page['max_ms']:>7} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
