"""The database's own limit for a queue (issue 28): the raw claim+complete loop.

No orchestrator code runs here: a table of N queued rows, and a loop that claims a
row (``UPDATE ... SET state='running' WHERE id = (first queued) RETURNING id``) and
completes it (``UPDATE ... SET state='success' WHERE id = ? AND state = 'running'``),
each in its own transaction, or 50 rows per transaction (batch-50). It is the most a
queue on that database can do per commit, measured in the same sitting as the engine
(``bench/run.py --vs-limits`` prints each engine figure beside it and the ratio)::

    python bench/limits.py                      # both backends
    python bench/limits.py --backend sqlite --count 3000 --json

SQLite runs with the engine's own pragmas (WAL, ``synchronous=FULL``, through
``orchestrator.store.core.db.make_engine`` for the SQLAlchemy Core loop); PostgreSQL
claims with ``FOR UPDATE SKIP LOCKED`` from 1 and 4 connections (threads).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as `python bench/limits.py` without installing
    sys.path.insert(0, ROOT)

from sqlalchemy import create_engine, text  # noqa: E402

from orchestrator.store.core.db import make_engine  # noqa: E402

DEFAULT_PG_URL = os.environ.get(
    "ORCHESTRATOR_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BATCH = 50

_CREATE = "CREATE TABLE q (id INTEGER PRIMARY KEY, state TEXT NOT NULL, owner TEXT)"
_INDEX = "CREATE INDEX q_state ON q (state, id)"
_CLAIM_SQLITE = (
    "UPDATE q SET state = 'running', owner = :o WHERE id IN "
    "(SELECT id FROM q WHERE state = 'queued' ORDER BY id LIMIT :n) RETURNING id"
)
_CLAIM_PG = (
    "UPDATE q SET state = 'running', owner = :o WHERE id IN (SELECT id FROM q WHERE "
    "state = 'queued' ORDER BY id LIMIT :n FOR UPDATE SKIP LOCKED) RETURNING id"
)
_DONE = "UPDATE q SET state = 'success' WHERE id = :i AND state = 'running' AND owner = :o"


def _rate(count: int, started: float) -> float:
    return count / (time.perf_counter() - started)


# -- SQLite ---------------------------------------------------------------------------
def sqlite3_loop(count: int, batch: int) -> float:
    """Raw sqlite3 (the stdlib driver), WAL and synchronous=FULL: tasks per second."""
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(os.path.join(tmp, "q.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(_CREATE)
        db.execute(_INDEX)
        db.executemany("INSERT INTO q (state) VALUES ('queued')", [()] * count)
        claim = _CLAIM_SQLITE.replace(":o", "?").replace(":n", "?")
        done = _DONE.replace(":i", "?").replace(":o", "?")
        finished = 0
        started = time.perf_counter()
        while finished < count:
            db.execute("BEGIN IMMEDIATE")
            ids = [r[0] for r in db.execute(claim, ("w", batch)).fetchall()]
            db.execute("COMMIT")
            if not ids:
                break
            db.execute("BEGIN IMMEDIATE")
            db.executemany(done, [(i, "w") for i in ids])
            db.execute("COMMIT")
            finished += len(ids)
        rate = _rate(finished, started)
        db.close()
        return rate


def core_sqlite_loop(count: int, batch: int) -> float:
    """SQLAlchemy Core on the engine's own SQLite engine (its pragmas): tasks/s."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{os.path.join(tmp, 'q.db')}")
        try:
            with engine.begin() as conn:
                conn.execute(text(_CREATE))
                conn.execute(text(_INDEX))
                conn.execute(text("INSERT INTO q (state) VALUES ('queued')"), [{}] * count)
            return _core_loop(engine, _CLAIM_SQLITE, count, batch, threads=1)
        finally:
            engine.dispose()


# -- PostgreSQL -----------------------------------------------------------------------
def _pg_database(admin_url: str) -> tuple[str, Callable[[], None]]:
    name = f"orch_limits_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.rsplit("/", 1)[0] + "/" + name

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url, drop


def core_pg_loop(admin_url: str, count: int, batch: int, threads: int) -> float:
    """SQLAlchemy Core on PostgreSQL, ``threads`` connections: tasks/s."""
    url, drop = _pg_database(admin_url)
    try:
        engine = create_engine(url, pool_size=threads + 1)
        with engine.begin() as conn:
            conn.execute(text(_CREATE.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY")))
            conn.execute(text(_INDEX))
            conn.execute(
                text("INSERT INTO q (state) SELECT 'queued' FROM generate_series(1, :n)"),
                {"n": count},
            )
        try:
            return _core_loop(engine, _CLAIM_PG, count, batch, threads)
        finally:
            engine.dispose()
    finally:
        drop()


def psycopg_loop(admin_url: str, count: int, batch: int, threads: int) -> float:
    """Raw psycopg on PostgreSQL, ``threads`` connections: tasks/s."""
    import psycopg

    url, drop = _pg_database(admin_url)
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(_CREATE.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"))
            conn.execute(_INDEX)
            conn.execute("INSERT INTO q (state) SELECT 'queued' FROM generate_series(1, %s)",
                         (count,))  # fmt: skip
        claim = _CLAIM_PG.replace(":o", "%(o)s").replace(":n", "%(n)s")
        done = _DONE.replace(":i", "%(i)s").replace(":o", "%(o)s")
        totals = [0] * threads

        def work(n: int) -> None:
            owner = f"w{n}"
            with psycopg.connect(dsn) as c:
                while True:
                    with c.transaction():
                        ids = [r[0] for r in c.execute(claim, {"o": owner, "n": batch})]
                    if not ids:
                        return
                    with c.transaction():
                        c.cursor().executemany(done, [{"i": i, "o": owner} for i in ids])
                    totals[n] += len(ids)

        started = time.perf_counter()
        _in_threads(work, threads)
        return _rate(sum(totals), started)
    finally:
        drop()


# -- shared ---------------------------------------------------------------------------
def _core_loop(engine: Any, claim_sql: str, count: int, batch: int, threads: int) -> float:
    claim, done = text(claim_sql), text(_DONE)
    totals = [0] * threads

    def work(n: int) -> None:
        owner = f"w{n}"
        while True:
            with engine.begin() as conn:
                ids = [r[0] for r in conn.execute(claim, {"o": owner, "n": batch})]
            if not ids:
                return
            with engine.begin() as conn:
                conn.execute(done, [{"i": i, "o": owner} for i in ids])
            totals[n] += len(ids)

    started = time.perf_counter()
    _in_threads(work, threads)
    return _rate(sum(totals), started)


def _in_threads(work: Callable[[int], None], threads: int) -> None:
    if threads == 1:
        work(0)
        return
    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


def measure(backend: str, count: int, pg_url: str = DEFAULT_PG_URL) -> dict[str, float]:
    """Every limit of ``backend``: name -> tasks per second (claim + complete)."""
    if backend == "sqlite":
        return {
            "sqlite3_single": sqlite3_loop(count, 1),
            "sqlite3_batch50": sqlite3_loop(count, BATCH),
            "core_single": core_sqlite_loop(count, 1),
            "core_batch50": core_sqlite_loop(count, BATCH),
        }
    return {
        "psycopg_1conn_single": psycopg_loop(pg_url, count, 1, 1),
        "psycopg_4conn_single": psycopg_loop(pg_url, count, 1, 4),
        "psycopg_4conn_batch50": psycopg_loop(pg_url, count, BATCH, 4),
        "core_1conn_single": core_pg_loop(pg_url, count, 1, 1),
        "core_4conn_single": core_pg_loop(pg_url, count, 1, 4),
        "core_4conn_batch50": core_pg_loop(pg_url, count, BATCH, 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("sqlite", "postgres", "all"), default="all")
    ap.add_argument("--count", type=int, default=2000, help="tasks per loop (default 2000)")
    ap.add_argument("--pg-url", default=DEFAULT_PG_URL)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.count < 1:
        ap.error("--count must be at least 1")
    backends = ("sqlite", "postgres") if args.backend == "all" else (args.backend,)
    out = {b: measure(b, args.count, args.pg_url) for b in backends}
    if args.json:
        print(json.dumps(out))
        return 0
    for backend, limits in out.items():
        for name, rate in limits.items():
            print(f"{backend:8} limit  {name:24} {rate:10.1f} tasks/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
