"""Durable commits, bounded PostgreSQL waits, and a SQLite file deleted under a process.

- An acknowledged SQLite write survives an OS crash: ``synchronous=FULL`` unless
  ``sqlite_synchronous=NORMAL`` is asked for.
- On PostgreSQL every store session has lock, statement and idle-in-transaction
  bounds derived from the lease, so a frozen holder cannot stall the others; the
  scheduler's wait on a held lock ends with a retryable error instead of hanging.
- A deleted or replaced SQLite file stops every write and the scheduler; a start
  that would create a fresh empty database where one was recorded is refused.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from orchestrator.engine.scheduler import Scheduler, TickResult
from orchestrator.engine.services import prepare_database
from orchestrator.errors import ConfigError
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.core.db import bounded_wait_ended
from orchestrator.store.core.identity import RECORD_FILE, DatabaseGoneError

ONE_TASK = """
from orchestrator import DAG, task

with DAG("one", schedule=None) as dag:
    @task
    def only(ctx):
        return 1
"""


# -- item 5: durable commits -------------------------------------------------------------------
def _synchronous(store: Store) -> int:
    with store.engine.connect() as conn:
        return conn.exec_driver_sql("PRAGMA synchronous").scalar_one()


def test_sqlite_commits_are_full_by_default(sqlite_url):
    store = Store(sqlite_url, settings=Settings.load({}, database_url=sqlite_url))
    try:
        assert _synchronous(store) == 2  # FULL: the WAL is synced at every commit
    finally:
        store.dispose()
    bare = Store(sqlite_url)  # no settings: the same default
    try:
        assert _synchronous(bare) == 2
    finally:
        bare.dispose()


def test_sqlite_normal_is_an_explicit_setting(sqlite_url):
    settings = Settings.load({"ORCHESTRATOR_SQLITE_SYNCHRONOUS": "normal"}, database_url=sqlite_url)
    store = Store(sqlite_url, settings=settings)
    try:
        assert _synchronous(store) == 1
    finally:
        store.dispose()
    with pytest.raises(ConfigError, match="sqlite_synchronous: expected one of FULL, NORMAL"):
        Store(sqlite_url, settings=settings.with_(sqlite_synchronous="off"))


# -- item 2: bounded PostgreSQL waits --------------------------------------------------------------
def _show(store: Store, name: str) -> str:
    with store.engine.connect() as conn:
        return conn.execute(text(f"SHOW {name}")).scalar_one()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_postgres_sessions_have_bounds_derived_from_the_lease(database_url):
    settings = Settings.load({}, database_url=database_url, lease_seconds=12, heartbeat_seconds=4)
    store = Store(database_url, settings=settings)
    try:
        assert _show(store, "lock_timeout") == "1200ms"
        assert _show(store, "idle_in_transaction_session_timeout") == "1200ms"
        assert _show(store, "statement_timeout") == "5s"  # a third of it, but at least 5 s
        assert _show(store, "tcp_keepalives_idle") == "2"
    finally:
        store.dispose()
    explicit = settings.with_(db_lock_timeout=0.25, db_statement_timeout=2.5)
    store = Store(database_url, settings=explicit)
    try:
        assert _show(store, "lock_timeout") == "250ms"
        assert _show(store, "statement_timeout") == "2500ms"
    finally:
        store.dispose()


def _run_with_queued_task(harness, write_dag) -> str:
    write_dag("one.py", ONE_TASK)
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("one", harness.clock.now())
    return run.run_id


@pytest.mark.parametrize("last", ["execute", "executemany"])
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_session_frozen_in_a_transaction_loses_its_locks_and_the_waiter_retries(
    harness, write_dag, settings, database_url, last
):
    """A holder that stops talking inside a transaction (a SIGSTOPped worker) is ended
    by the server after the idle bound; the scheduler's bounded lock waits end with a
    retryable error in the meantime, and its next tick goes through. Also when the
    holder's last statement was an ``executemany`` (psycopg's pipeline left the session
    with no idle bound, issue 32)."""
    run_id = _run_with_queued_task(harness, write_dag)
    tight = settings.with_(lease_seconds=3.0, heartbeat_seconds=1.0)  # bounds of 0.5 s
    frozen = Store(database_url, settings=tight)
    waiter = Store(database_url, settings=tight.with_(db_lock_timeout=0.05))
    scheduler = Scheduler(waiter, harness.clock, tight, scheduler_id="waiting-scheduler")
    outcome: dict[str, object] = {}

    def tick_until_through() -> None:
        errors = []
        for _ in range(200):
            try:
                outcome["result"] = scheduler.tick(harness.clock.now())
                outcome["errors"] = errors
                return
            except DBAPIError as exc:
                errors.append(exc)
                assert bounded_wait_ended(exc), exc
        outcome["errors"] = errors

    conn = frozen.engine.connect()
    try:
        conn.begin()
        conn.execute(
            select(m.dag_runs.c.id).where(m.dag_runs.c.run_id == run_id).with_for_update()
        ).all()
        if last == "executemany":
            conn.execute(
                text("UPDATE dag_runs SET run_id = run_id WHERE run_id = :r"),
                [{"r": run_id}, {"r": "no such run"}],
            )
        thread = threading.Thread(target=tick_until_through, daemon=True)
        thread.start()
        thread.join(15)  # without bounds the tick waits on the lock as long as we sleep
        assert not thread.is_alive(), "the scheduler is still waiting on the frozen lock"
        assert isinstance(outcome.get("result"), TickResult)
        assert outcome["result"].leader and outcome["result"].runs_started == [run_id]
        assert outcome["errors"]  # it did wait on the lock, in bounded, retried waits
        with pytest.raises(DBAPIError):  # the frozen session was ended by the server
            conn.execute(text("SELECT 1"))
    finally:
        conn.close()
        frozen.dispose()
        waiter.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_slow_statements_are_named_in_the_log_when_asked(
    harness, write_dag, settings, database_url, caplog
):
    """db_slow_statement_seconds: a statement that waited on a peer's lock is logged with
    its first words and seconds; one that gave up is logged with its SQLSTATE; without
    the setting nothing is logged (issue 32's tool for finding the wait)."""
    run_id = _run_with_queued_task(harness, write_dag)
    tight = settings.with_(lease_seconds=3.0, heartbeat_seconds=1.0)
    holder = Store(database_url)  # no bounds: the peer holds its lock as long as it likes
    watched = Store(database_url, settings=tight.with_(db_slow_statement_seconds=0.1))
    quiet = Store(database_url, settings=tight)
    lock = select(m.dag_runs.c.id).where(m.dag_runs.c.run_id == run_id).with_for_update()
    caplog.set_level(logging.WARNING, logger="orchestrator.store.core.statement_log")
    try:
        for store in (watched, quiet):
            conn = holder.engine.connect()
            conn.begin()
            conn.execute(lock).all()
            releaser = threading.Timer(0.3, conn.rollback)  # the peer lets go after 0.3 s
            releaser.start()
            with store.write() as c:  # waits on the peer, then goes through
                c.execute(lock).all()
            releaser.join()
            conn.close()
        waited = [r.getMessage() for r in caplog.records]
        assert len(waited) == 1, waited  # the watched store's wait only
        assert waited[0].startswith("slow statement: ") and "SELECT dag_runs.id" in waited[0]
        assert float(waited[0].split()[2].rstrip("s")) >= 0.2
        caplog.clear()
        conn = holder.engine.connect()
        conn.begin()
        conn.execute(lock).all()  # held past the lock bound (0.5 s): the waiter gives up
        with pytest.raises(DBAPIError), watched.write() as c:
            c.execute(lock).all()
        conn.rollback()
        conn.close()
        (gave_up,) = [r.getMessage() for r in caplog.records]
        assert "gave up after" in gave_up and "SQLSTATE 55P03" in gave_up, gave_up
        assert run_id not in gave_up  # the statement's words, never its parameters
    finally:
        for store in (holder, watched, quiet):
            store.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_the_scheduler_loop_retries_a_lock_timeout_without_a_traceback(
    harness, write_dag, settings, database_url, caplog
):
    _run_with_queued_task(harness, write_dag)
    tight = settings.with_(db_lock_timeout=0.1, scheduler_interval=0.05)
    store = Store(database_url, settings=tight)
    stop = threading.Event()
    scheduler = Scheduler(store, harness.clock, tight, scheduler_id="looping-scheduler")
    ticks: list[object] = []
    real_tick = scheduler.tick

    def tick(now):
        try:
            result = real_tick(now)
        except Exception as exc:
            ticks.append(exc)
            raise
        ticks.append(result)
        if result.leader:
            stop.set()
        return result

    scheduler.tick = tick  # type: ignore[method-assign]
    holder = store.engine.connect()
    try:
        holder.begin()  # hold the leader lease row: the loop's renewals time out
        holder.execute(text("SET LOCAL lock_timeout = 0"))
        harness.store.acquire_leadership("someone", harness.clock.now(), timedelta(seconds=-1))
        holder.execute(select(m.scheduler_lease).with_for_update()).all()
        thread = threading.Thread(target=scheduler.run_forever, args=(stop,), daemon=True)
        with caplog.at_level(logging.WARNING, logger="orchestrator.engine.scheduler"):
            thread.start()
            deadline = time.monotonic() + 10
            while sum(isinstance(t, Exception) for t in ticks) < 2:
                assert time.monotonic() < deadline, ticks
                time.sleep(0.02)
            holder.rollback()
            thread.join(10)
        assert not thread.is_alive()
    finally:
        stop.set()
        holder.close()
        store.dispose()
    failures = [t for t in ticks if isinstance(t, Exception)]
    assert failures and all(bounded_wait_ended(t) for t in failures)
    assert isinstance(ticks[-1], TickResult) and ticks[-1].leader
    warnings = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert warnings and all(r.levelno == logging.WARNING and not r.exc_info for r in warnings)


# -- item 3: a deleted SQLite file ------------------------------------------------------------------
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_deleted_sqlite_file_stops_every_write_and_the_scheduler(
    harness, write_dag, database_url, caplog
):
    run_id = _run_with_queued_task(harness, write_dag)
    os.unlink(make_url(database_url).database)
    with (
        caplog.at_level(logging.CRITICAL, logger="orchestrator.store.core.identity"),
        pytest.raises(DatabaseGoneError, match="was deleted while in use; the scheduler"),
    ):
        harness.tick()
    [loud] = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert "stops writing" in loud.getMessage()
    with pytest.raises(DatabaseGoneError):
        harness.store.trigger_run("one", harness.clock.now())
    assert harness.store.get_run(run_id).state == "queued"  # nothing moved on
    assert harness.store.identity_problem() is not None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_replaced_sqlite_file_is_noticed(harness, write_dag, database_url, tmp_path):
    _run_with_queued_task(harness, write_dag)
    path = make_url(database_url).database
    shutil.copy(path, tmp_path / "other.db")
    os.replace(tmp_path / "other.db", path)
    with pytest.raises(DatabaseGoneError, match="was replaced by another file"):
        harness.tick()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_starting_refuses_to_create_a_database_where_one_was_recorded(settings, database_url):
    prepare_database(settings)
    record = os.path.join(settings.state_dir, RECORD_FILE)
    assert os.path.exists(record)
    path = make_url(database_url).database
    os.unlink(path)
    with pytest.raises(ConfigError, match="is missing, but .*databases.json records"):
        prepare_database(settings)
    assert not os.path.exists(path)  # nothing created
    prepare_database(settings, new_database=True)  # on purpose
    assert os.path.exists(path)
    prepare_database(settings)  # recorded and present: an ordinary start


def test_a_scan_whose_save_failed_is_parsed_again(harness, write_dag, monkeypatch):
    """A refused write (a lock timeout, an outage) must not make the processor believe
    the file is stored: the next scan parses it again instead of waiting for an edit."""
    write_dag("one.py", ONE_TASK)
    real_save = harness.store.save_dags
    calls = []

    def failing_once(saves, now):
        calls.append(len(saves))
        if len(calls) == 1:
            raise DBAPIError("INSERT ...", {}, Exception("canceling statement due to lock timeout"))
        return real_save(saves, now)

    monkeypatch.setattr(harness.store, "save_dags", failing_once)
    with pytest.raises(DBAPIError):
        harness.parse()
    again = harness.parse()
    assert (again.parsed, again.dags) == (1, 1)
    assert [d.dag_id for d in harness.store.list_dags()] == ["one"]
