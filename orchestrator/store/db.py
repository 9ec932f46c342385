"""Engines, transactions and schema upgrades.

SQLite runs in WAL mode with a busy timeout, and write transactions start with
``BEGIN IMMEDIATE`` so two writers queue instead of deadlocking on a lock upgrade.
PostgreSQL uses psycopg 3 at READ COMMITTED; correctness comes from conditional
UPDATEs and ``FOR UPDATE SKIP LOCKED``, never from isolation levels.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError

from orchestrator.errors import ConfigError

log = logging.getLogger(__name__)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def normalise_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 here, not psycopg2."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str, **kwargs: Any) -> Engine:
    url = normalise_url(url)
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ConfigError(f"database URL {url!r} is invalid: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(parsed.database)), exist_ok=True)
        engine = create_engine(
            parsed, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs
        )
        _configure_sqlite(engine)
        return engine
    if parsed.get_backend_name() == "postgresql":
        if "poolclass" not in kwargs:
            kwargs.setdefault("pool_size", 10)
            kwargs.setdefault("max_overflow", 20)
        # not pool_pre_ping (a round trip before every transaction): connections idle
        # for a while are checked at checkout; a busy loop's connection is not
        engine = create_engine(parsed, **kwargs)
        if not kwargs.get("pool_pre_ping"):
            _ping_when_idle(engine)
        return engine
    raise ConfigError(
        f"database URL {url!r}: only sqlite:/// and postgresql+psycopg:// are supported"
    )


IDLE_PING_SECONDS = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection before use if it sat idle over ``IDLE_PING_SECONDS``.

    A dead one (the server restarted, a proxy cut it) is replaced transparently, as
    with ``pool_pre_ping``; a connection used moments ago is trusted, and if it died
    since, the transaction fails, SQLAlchemy invalidates the pool, and the caller's
    loop retries (every loop does). Saves a round trip per transaction when busy.
    """

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["checked_in"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        last = record.info.get("checked_in")
        if last is None or time.monotonic() - last <= IDLE_PING_SECONDS:
            return
        try:
            cur = dbapi_conn.cursor()
            try:
                cur.execute("SELECT 1")
            finally:
                cur.close()
            dbapi_conn.rollback()
        except Exception as exc:
            raise DisconnectionError(f"stale pooled connection: {exc}") from exc


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get("sqlite_read_only"):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")


def migrations_dir() -> str:
    """The Alembic scripts: inside the package when installed from a wheel
    (``orchestrator/_migrations``), ``migrations/`` beside the package in a checkout."""
    installed = os.path.join(ROOT, "orchestrator", "_migrations")
    return installed if os.path.isdir(installed) else os.path.join(ROOT, "migrations")


def alembic_config(url: str) -> Config:
    """The Alembic configuration, built here so an installed package needs no alembic.ini
    (the checkout's alembic.ini, for the ``alembic`` command, says the same)."""
    cfg = Config()
    cfg.set_main_option("script_location", migrations_dir())
    cfg.set_main_option("file_template", "%%(rev)s_%%(slug)s")
    cfg.attributes["url"] = normalise_url(url)
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the schema at ``url`` up to ``revision`` (``orchestrator db upgrade``)."""
    from alembic.migration import MigrationContext

    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            before = MigrationContext.configure(conn).get_current_revision()
            cfg = alembic_config(url)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
            after = MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
    if after != before:
        log.info("migrated the schema from %s to %s", before or "nothing", after)
