"""Engines, transactions and schema upgrades.

SQLite runs in WAL mode with a busy timeout, and write transactions start with
``BEGIN IMMEDIATE`` so two writers queue instead of deadlocking on a lock upgrade.
Commits are ``synchronous=FULL`` by default: a write acknowledged to a caller
survives an OS crash or power loss (``NORMAL`` is an explicit, documented choice).
PostgreSQL uses psycopg 3 at READ COMMITTED; correctness comes from conditional
UPDATEs and ``FOR UPDATE SKIP LOCKED``, never from isolation levels. Every session
a store opens has bounded waits (:class:`DbOptions`): a lock wait, a statement and
an idle-in-transaction session all end well inside the lease, so a frozen process
(SIGSTOP, a paused VM, a half-open connection) cannot hold locks that stall the
others; the loops retry what such a timeout interrupts.

>>> opts = DbOptions.from_settings(Settings.load({}))   # doctest: +SKIP
>>> opts.lock_timeout, opts.idle_in_transaction_timeout  # doctest: +SKIP
(3.0, 3.0)
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import ExecuteStyle
from sqlalchemy.exc import DisconnectionError

from orchestrator.errors import ConfigError
from orchestrator.store.core.statement_log import log_slow_statements

log = logging.getLogger(__name__)
if TYPE_CHECKING:
    from orchestrator.settings import Settings

# the folder holding the orchestrator package (orchestrator/store/core/db.py, three up)
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def normalise_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 here, not psycopg2."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


SYNCHRONOUS_MODES = ("FULL", "NORMAL", "EXTRA")
DEFAULT_LEASE_SECONDS = 30.0
# SQLSTATEs of a bounded wait that ended: lock_timeout, statement_timeout (query
# canceled) and a session ended for idling in a transaction. The loops retry them.
BOUNDED_WAIT_SQLSTATES = {"55P03", "57014", "25P03"}


@dataclass(frozen=True)
class DbOptions:
    """How a store's sessions behave: SQLite durability, PostgreSQL bounded waits.

    Times are seconds; ``None`` leaves the server's default (no bound). The defaults
    come from the lease (:meth:`from_settings`): a lock wait or an idle transaction
    lasts at most a tenth of it, a statement a third, and a dead peer is noticed by
    TCP keepalives in about a quarter, so nobody waits on a frozen process for long.
    Floors (0.5 s, 5 s, 1 s) keep a very short lease (a test's) from cutting off
    transactions that are merely slow on a loaded machine.
    """

    sqlite_synchronous: str = "FULL"
    lock_timeout: float | None = None
    statement_timeout: float | None = None
    idle_in_transaction_timeout: float | None = None
    keepalive_seconds: float | None = None
    slow_statement_seconds: float | None = None  # log slower statements (statement_log)

    @classmethod
    def from_settings(cls, settings: Settings | None) -> DbOptions:
        lease = settings.lease_seconds if settings is not None else DEFAULT_LEASE_SECONDS

        def pick(name: str, share: float, floor: float) -> float:
            value = getattr(settings, name, None) if settings is not None else None
            return float(value) if value else max(lease * share, floor)

        return cls(
            sqlite_synchronous=(
                settings.sqlite_synchronous if settings is not None else "FULL"
            ).upper(),
            lock_timeout=pick("db_lock_timeout", 1 / 10, 0.5),
            statement_timeout=pick("db_statement_timeout", 1 / 3, 5.0),
            idle_in_transaction_timeout=pick("db_idle_in_transaction_timeout", 1 / 10, 0.5),
            keepalive_seconds=pick("db_keepalive_seconds", 1 / 6, 1.0),
            slow_statement_seconds=getattr(settings, "db_slow_statement_seconds", None),
        )

    def postgres_connect_args(self, existing_options: str | None = None) -> dict[str, Any]:
        """libpq parameters: session settings (``options``) and client keepalives."""
        gucs: list[tuple[str, int]] = []
        for name, value in (
            ("lock_timeout", self.lock_timeout),
            ("statement_timeout", self.statement_timeout),
            ("idle_in_transaction_session_timeout", self.idle_in_transaction_timeout),
        ):
            if value:
                gucs.append((name, max(1, math.ceil(round(value * 1000, 3)))))
        args: dict[str, Any] = {}
        if self.keepalive_seconds:
            idle, interval, count = _keepalive(self.keepalive_seconds)
            user_timeout_ms = (idle + interval * count) * 1000
            # the server's side: it notices a dead or paused client and ends its session
            gucs += [
                ("tcp_keepalives_idle", idle),
                ("tcp_keepalives_interval", interval),
                ("tcp_keepalives_count", count),
                ("tcp_user_timeout", user_timeout_ms),
            ]
            # our side: a dead server or a cut network fails the call instead of hanging
            args.update(
                keepalives=1,
                keepalives_idle=idle,
                keepalives_interval=interval,
                keepalives_count=count,
                tcp_user_timeout=user_timeout_ms,
            )
        if gucs:
            options = " ".join(f"-c {name}={value}" for name, value in gucs)
            args["options"] = f"{existing_options} {options}" if existing_options else options
        return args


def _keepalive(idle_seconds: float) -> tuple[int, int, int]:
    """(idle, interval, count) in whole seconds: a dead peer is noticed after
    about ``idle_seconds`` plus three probes a fifth of that apart."""
    idle = max(1, math.ceil(idle_seconds))
    return idle, max(1, math.ceil(idle / 5)), 3


def bounded_wait_ended(exc: BaseException) -> bool:
    """True if ``exc`` is a PostgreSQL lock, statement or idle-transaction timeout.

    The loops (scheduler tick, worker round, heartbeat) retry these without a
    traceback: the wait was bounded on purpose, so another process could go on.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "sqlstate", None) in BOUNDED_WAIT_SQLSTATES:
            return True
        exc = getattr(exc, "orig", None) or exc.__cause__  # type: ignore[assignment]
    return False


def make_engine(url: str, *, options: DbOptions | None = None, **kwargs: Any) -> Engine:
    """An engine for ``url``; ``options`` (default: FULL commits, no PostgreSQL
    bounds, as schema upgrades want) shape every session it opens."""
    options = options or DbOptions()
    if options.sqlite_synchronous not in SYNCHRONOUS_MODES:
        raise ConfigError(
            f"sqlite_synchronous: expected one of {', '.join(SYNCHRONOUS_MODES)}, "
            f"got {options.sqlite_synchronous!r}"
        )
    url = normalise_url(url)
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ConfigError(f"database URL {url!r} is invalid: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            folder = os.path.dirname(os.path.abspath(parsed.database))
            os.makedirs(folder, mode=0o700, exist_ok=True)
        engine = create_engine(
            parsed, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs
        )
        _configure_sqlite(engine, options.sqlite_synchronous)
        if options.slow_statement_seconds:
            log_slow_statements(engine, options.slow_statement_seconds)
        return engine
    if parsed.get_backend_name() == "postgresql":
        if "poolclass" not in kwargs:
            kwargs.setdefault("pool_size", 10)
            kwargs.setdefault("max_overflow", 20)
        # not pool_pre_ping (a round trip before every transaction): connections idle
        # for a while are checked at checkout; a busy loop's connection is not
        connect_args = dict(kwargs.pop("connect_args", {}))
        connect_args.update(options.postgres_connect_args(parsed.query.get("options")))  # type: ignore[arg-type]
        engine = create_engine(parsed, connect_args=connect_args, **kwargs)
        if not kwargs.get("pool_pre_ping"):
            _ping_when_idle(engine)
        # an INSERT of many rows is one statement of many VALUES (a round trip per 1,000
        # rows), not psycopg's pipelined executemany (see the next function)
        engine.dialect.use_insertmanyvalues_wo_returning = True
        if options.idle_in_transaction_timeout:
            _rearm_idle_timeout_after_executemany(engine)
        if options.slow_statement_seconds:
            log_slow_statements(engine, options.slow_statement_seconds, BOUNDED_WAIT_SQLSTATES)
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


def _rearm_idle_timeout_after_executemany(engine: Engine) -> None:
    """Give a session its idle-in-transaction bound back after every ``executemany``.

    psycopg 3 sends an ``executemany`` through libpq's pipeline mode, whose last
    message (a flush request) reaches the server after the pipeline's Sync. PostgreSQL
    disarms ``idle_in_transaction_session_timeout`` whenever it reads a message and
    re-arms it only when it reports ready for a query, which a flush request does not
    make it do: a session that stops right after an ``executemany`` (its process frozen
    by SIGSTOP, a paused VM) keeps its row locks with no bound at all, and every writer
    of those rows waits until it wakes (issue 32; ``tests/system/test_frozen_worker.py``).
    One trivial statement after the pipeline (a round trip) ends with a ready-for-query,
    and so re-arms the bound before control returns to the caller. INSERTs of many rows
    do not need it: they are sent as one statement (``use_insertmanyvalues_wo_returning``).
    """

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: Any, cursor: Any, _stmt: Any, _params: Any, ctx: Any, many: bool) -> None:
        if many and ctx is not None and ctx.execute_style is ExecuteStyle.EXECUTEMANY:
            cursor.connection.execute("SELECT 1").close()


def _configure_sqlite(engine: Engine, synchronous: str = "FULL") -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous}")  # one of SYNCHRONOUS_MODES
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


def has_schema(engine: Engine) -> bool:
    """Whether the database behind ``engine`` has the orchestrator's tables (its
    ``dag_runs`` table): False for a database nobody has migrated yet. The CLI asks
    before it opens a store or creates a database."""
    from sqlalchemy import inspect

    return inspect(engine).has_table("dag_runs")
