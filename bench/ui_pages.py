"""Web UI page timings: a big store, and a wide DAG under polling clients.

1. A big store (100,000 runs and 1,000,000 task instances): bulk-loads a fresh
   database (SQLite file or a new PostgreSQL database), then times the DAG list and a
   DAG's page (grid, graph, history) with the Flask test client: server time only, no
   network. Target: well under 200 ms each.
2. A wide DAG (``--wide-tasks``, default 10,000: start >> 9,998 parallel tasks >> end)
   with a few finished runs: the DAG's page, a run's page and their JSON APIs, server
   time (test client; the first view, which lays the version out once, apart). Then a
   real web server (waitress, `web_threads` threads (8), in its own process) with four clients keeping
   both pages open as a browser tab does (app.js: the page's JSON every 2 s, the page
   again when that changed, here every ``--refresh-every`` polls), while /health is
   asked every 100 ms.
   Targets (issue 12, item 18): each page under 500 ms, /health under 50 ms.
   Pages are timed with the collector tuned as the web server tunes it
   (``--default-gc`` for CPython's defaults).

    python bench/ui_pages.py                        # both, SQLite
    python bench/ui_pages.py --backend postgres     # PostgreSQL on 127.0.0.1:5432
    python bench/ui_pages.py --only wide            # just the wide DAG
    python bench/ui_pages.py --runs 20000           # smaller store, for a quick look

It prints figures and asserts no times (a loaded machine is slower, not wrong).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, insert, select, text, update

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag
from orchestrator.engine.services import web_ui
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.core.db import upgrade

create_app = web_ui().create_app  # the checkout's webui/ or the installed one

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


def wide_dag(dag_id: str, tasks: int) -> dict:
    """start >> [w_00000 ... ] >> end: ``tasks`` tasks in three layers."""
    with DAG(dag_id, schedule=None, start_date=T0, tags=["bench"]) as dag:
        start = task(lambda ctx: None, task_id="start")
        end = task(lambda ctx: None, task_id="end")
        for i in range(tasks - 2):
            t = task(lambda ctx: None, task_id=f"w_{i:05d}")
            start >> t
            t >> end
    return serialize_dag(dag)


def load_wide(store: Store, tasks: int, runs: int) -> list[str]:
    """The wide DAG and ``runs`` finished runs, each task with one successful try."""
    store.save_dag(wide_dag("wide", tasks), T0)
    run_ids = [store.trigger_run("wide", T0 + timedelta(hours=i)).run_id for i in range(runs)]
    ti = m.task_instances
    with store.write() as conn:
        for k, run_id in enumerate(run_ids):
            at = T0 + timedelta(hours=k)
            conn.execute(
                update(m.dag_runs)
                .where(m.dag_runs.c.run_id == run_id)
                .values(state="success", start_date=at, end_date=at + timedelta(minutes=9))
            )
            conn.execute(
                update(ti)
                .where(ti.c.run_id == run_id)
                .values(state="success", try_number=1, start_date=at, end_date=at + timedelta(minutes=1))
            )  # fmt: skip
            rows = conn.execute(select(ti.c.id, ti.c.task_id).where(ti.c.run_id == run_id)).all()
            conn.execute(
                insert(m.task_tries),
                [{"ti_id": r.id, "dag_id": "wide", "run_id": run_id, "task_id": r.task_id,
                  "try_number": 1, "worker": "bench", "state": "success",
                  "start_date": at + timedelta(seconds=5), "end_date": at + timedelta(minutes=1),
                  "exit_status": 0}
                 for r in rows],
            )  # fmt: skip
    return run_ids


SERVER = """
import logging
import sys
from orchestrator.settings import Settings
from orchestrator.engine.services import web_ui
create_app, serve = web_ui().create_app, web_ui("server").serve
url, tmp, ready = sys.argv[1:4]
logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth is 1"
settings = Settings.load({}, cwd=tmp, database_url=url, state_dir=tmp + "/state")
def on_ready(base):
    with open(ready, "w") as f:
        f.write(base)
serve(create_app(settings), "127.0.0.1", 0, threads=settings.web_threads, on_ready=on_ready)
"""


def _get(url: str) -> tuple[float, int]:
    """(milliseconds, bytes) of one GET. /health answers 503 here (no scheduler or worker
    runs beside the bench's web server) after making every one of its checks: timed too."""
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            size = len(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code != 503 or not url.endswith("/health"):
            raise
        size = len(exc.read())
    return (time.perf_counter() - t) * 1000, size


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def calibrate() -> float:
    """Milliseconds for sum(range(10**7)): about 150 on an idle 2026 laptop core; a
    loaded machine reads higher, and every figure here with it."""
    t = time.perf_counter()
    sum(range(10**7))
    return round((time.perf_counter() - t) * 1000, 1)


def _poll_url(base: str, path: str) -> str:
    """The JSON a page's app.js polls (its body's data-poll attribute)."""
    with urllib.request.urlopen(base + path, timeout=120) as response:
        html = response.read().decode()
    return re.search(r'data-poll="([^"]+)"', html).group(1).replace("&amp;", "&")  # type: ignore[union-attr]


def under_load(url: str, tmp: str, pages: list[str], seconds: float, refresh_every: int) -> dict:
    """/health latency over real HTTP while four clients keep ``pages`` open.

    Each client does what app.js does in an open tab of each page: poll the page's
    JSON every 2 s, and fetch the page again when that JSON changed, which is taken
    to happen every ``refresh_every`` polls (a running DAG changes all the time).
    """
    ready = os.path.join(tmp, "server_url")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    server = subprocess.Popen([sys.executable, "-c", SERVER, url, tmp, ready], env=env)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(ready) or not _read(ready):
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the web server did not start")
            time.sleep(0.1)
        base = _read(ready)
        polls = {path: _poll_url(base, path) for path in pages}  # and the one layout
        stop = threading.Event()
        took: dict[str, list[float]] = {p: [] for p in pages + list(polls.values())}

        def client() -> None:
            n = 0
            while not stop.is_set():
                started = time.monotonic()
                for path, poll in polls.items():
                    took[poll].append(_get(base + poll)[0])
                    if n % refresh_every == 0:
                        took[path].append(_get(base + path)[0])
                n += 1
                stop.wait(max(0.0, 2.0 - (time.monotonic() - started)))

        clients = [threading.Thread(target=client, daemon=True) for _ in range(4)]
        for c in clients:
            c.start()
        health: list[float] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            health.append(_get(base + "/health")[0])
            time.sleep(0.1)
        stop.set()
        for c in clients:
            c.join(120)
        health.sort()
        return {
            "health_median_ms": round(statistics.median(health), 1),
            "health_p95_ms": round(health[max(int(len(health) * 0.95) - 1, 0)], 1),
            "health_max_ms": round(health[-1], 1),
            "health_requests": len(health),
            "client_ms": {
                p: round(statistics.median(v), 1) if v else None for p, v in took.items()
            },  # fmt: skip
            "client_requests": {p: len(v) for p, v in took.items()},
            "refresh_every": refresh_every,
        }
    finally:
        server.terminate()
        server.wait(30)


def run_wide(
    backend: str, tasks: int, runs: int, repeat: int, seconds: float, refresh_every: int
) -> dict:
    tmp = tempfile.mkdtemp(prefix="orch_ui_wide_")
    admin = name = None
    if backend == "sqlite":
        url = f"sqlite:///{tmp}/bench.db"
    else:
        name = f"orch_bench_wide_{uuid.uuid4().hex[:8]}"
        admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    try:
        upgrade(url)
        store = Store(url)
        run_ids = load_wide(store, tasks, runs)
        settings = Settings.load({}, cwd=tmp, database_url=url, state_dir=f"{tmp}/state")
        client = create_app(settings, store).test_client()
        t = time.perf_counter()
        assert client.get("/dags/wide").status_code == 200
        first_ms = round((time.perf_counter() - t) * 1000, 1)
        latest = run_ids[-1]
        columns = web_ui("data").grid_runs(tasks)
        pages = ["/dags/wide", f"/runs/{latest}"]
        apis = [
            f"/api/v1/dags/wide/grid?limit={columns}",
            f"/api/v1/runs/{latest}/summary",
            f"/api/v1/runs/{latest}",
        ]
        timings = [time_page(client, p, repeat) for p in pages + apis]
        sizes = {p: len(client.get(p).data) for p in pages + apis}
        store.dispose()
        load = under_load(url, tmp, pages, seconds, refresh_every)
        return {"backend": backend, "tasks": tasks, "runs": runs, "grid_columns": columns,
                "calibration_ms": calibrate(),
                "first_view_ms": first_ms, "pages": timings, "bytes": sizes, "load": load}  # fmt: skip
    finally:
        if admin is not None:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def print_wide(result: dict) -> None:
    print(f"{result['backend']}: a {result['tasks']:,}-task wide DAG, {result['runs']} finished "
          f"runs (the grid shows {result['grid_columns']}); first view, with its one layout: "
          f"{result['first_view_ms']} ms (calibration: sum(range(10**7)) took "
          f"{result['calibration_ms']} ms)")  # fmt: skip
    for p in result["pages"]:
        size = result["bytes"][p["path"]] / 1e6
        print(f"  {p['path']:<62} median {p['median_ms']:>7} ms   max {p['max_ms']:>7} ms"
              f"   {size:5.1f} MB")  # fmt: skip
    load = result["load"]
    print(f"  /health while 4 clients keep both pages open (poll every 2 s, page again every "
          f"{load['refresh_every']} polls; real HTTP, 8 server threads): median "
          f"{load['health_median_ms']} ms, p95 {load['health_p95_ms']} ms, max "
          f"{load['health_max_ms']} ms over {load['health_requests']} requests")  # fmt: skip
    for path, ms in load["client_ms"].items():
        n = load["client_requests"][path]
        print(f"    client median {path:<56} {ms} ms ({n} requests)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "all"], default="sqlite")
    parser.add_argument("--only", choices=["store", "wide", "all"], default="all")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--dags", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--wide-tasks", type=int, default=10_000)
    parser.add_argument("--wide-runs", type=int, default=5)
    parser.add_argument("--load-seconds", type=float, default=30.0)
    parser.add_argument("--refresh-every", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="time the in-process pages with CPython's collector settings, not the web "
        "server's (webui/server.py tune_gc); the real server of the load test tunes anyway",
    )
    args = parser.parse_args(argv)
    if not args.default_gc:
        web_ui("server").tune_gc()  # as the web server process runs its pages
    backends = ["sqlite", "postgres"] if args.backend == "all" else [args.backend]
    for backend in backends:
        if args.only in ("wide", "all"):
            wide = run_wide(
                backend, args.wide_tasks, args.wide_runs, args.repeat, args.load_seconds,
                args.refresh_every,
            )  # fmt: skip
            print(json.dumps(wide) if args.json else "", end="\n" if args.json else "")
            if not args.json:
                print_wide(wide)
        if args.only == "wide":
            continue
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
