"""The worker round's statements on SQLite follow indexes, so a round costs the same
with 10 or 10,000 claimable instances (issue 14: bench/mapping.py's 10,000 mapped
instances). Each test reads SQLite's own query plan of the statement the store runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import event, insert, select

from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.tasks import claims, finish

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _plan(store: Store, statement, params: dict) -> list[str]:
    """SQLite's plan of ``statement`` as the store sends it (expanding lists rendered)."""
    seen: list[tuple[str, tuple]] = []

    def grab(conn, cursor, sql, values, context, executemany):  # noqa: ANN001
        seen.append((sql, values))

    event.listen(store.engine, "before_cursor_execute", grab)
    try:
        with store.engine.connect() as conn:
            conn.execute(statement, params)
            conn.rollback()
    finally:
        event.remove(store.engine, "before_cursor_execute", grab)
    sql, values = next(
        (q, v) for q, v in seen if q.lstrip().upper().startswith(("UPDATE", "SELECT"))
    )
    with store.engine.connect() as conn:
        rows = conn.connection.driver_connection.execute("EXPLAIN QUERY PLAN " + sql, values)
        return [r[3] for r in rows.fetchall()]


def _fill(store: Store, n: int) -> None:
    """``n`` instances of one run, four running, the others queued, and their tries."""
    with store.write() as conn:
        run_pk = conn.execute(
            insert(m.dag_runs)
            .values(
                dag_id="d",
                run_id="r",
                version_hash="v",
                run_type="manual",
                logical_date=NOW,
                data_interval_start=NOW,
                data_interval_end=NOW,
                state="running",
                created_at=NOW,
            )
            .returning(m.dag_runs.c.id)
        ).scalar_one()
        conn.execute(
            insert(m.task_instances),
            [
                {
                    "run_pk": run_pk,
                    "dag_id": "d",
                    "run_id": "r",
                    "task_id": "t",
                    "map_index": i,
                    "state": "queued" if i >= 4 else "running",
                    "try_number": 0 if i >= 4 else 1,
                    "max_tries": 1,
                    "queue": "default",
                    "ready_at": NOW - timedelta(seconds=i % 60),
                    "owner": None if i >= 4 else "w",
                }
                for i in range(n)
            ],
        )
        ids = conn.execute(select(m.task_instances.c.id).order_by(m.task_instances.c.id)).scalars()
        conn.execute(  # a finished earlier try for every queued one, the running tries
            insert(m.task_tries),
            [
                {"ti_id": ti_id, "dag_id": "d", "run_id": "r", "task_id": "t",
                 "try_number": 1 if k < 4 else 0, "worker": "w",
                 "state": "running" if k < 4 else "failed", "start_date": NOW}
                for k, ti_id in enumerate(ids)
            ],
        )  # fmt: skip
        conn.exec_driver_sql("ANALYZE")


def test_the_claim_reads_each_state_along_the_claim_order_index(sqlite_url):
    store = Store(sqlite_url)
    try:
        _fill(store, 3000)
        plan = _plan(
            store,
            claims._TAKE,
            {"ready_by": NOW, "queues": ["default"], "limit": 4}
            | claims._taking("w2", NOW, NOW + timedelta(seconds=30)),
        )
    finally:
        store.dispose()
    reads = [line for line in plan if "task_instances" in line]
    # the update finds the picked rows by key, each state is read off the claim order
    assert any("INTEGER PRIMARY KEY" in line for line in reads), plan
    assert sum("ix_task_instances_claim_order" in line for line in reads) == len(
        claims.CLAIMABLE
    ), plan
    # the only sort left is of the few rows the states gave (one per branch at most)
    assert plan.count("USE TEMP B-TREE FOR ORDER BY") <= 1, plan


def test_recording_successes_finds_tries_and_instances_by_key(sqlite_url):
    store = Store(sqlite_url)
    try:
        _fill(store, 3000)
        ids = [1, 2]
        success = _plan(
            store,
            finish._SUCCESS,
            {"ids": ids, "keys": [(i, 1, "w") for i in ids], "end": NOW, "b_result": None},
        )
        close = _plan(
            store, finish._CLOSE_TRIES, {"ids": ids, "pairs": [(i, 1) for i in ids], "end": NOW}
        )
    finally:
        store.dispose()
    assert not any(line.startswith("SCAN task_") for line in success + close), success + close
    assert any("INTEGER PRIMARY KEY" in line for line in success), success


def test_the_look_for_pools_with_waiting_tasks_reads_only_pooled_rows(sqlite_url):
    store = Store(sqlite_url)
    try:
        _fill(store, 3000)  # all unpooled: the look must not walk them
        plan = _plan(store, claims._WAITING_POOLS_SQLITE, {"ready_by": NOW, "queues": ["default"]})
    finally:
        store.dispose()
    assert any("ix_task_instances_pooled_ready" in line for line in plan), plan
