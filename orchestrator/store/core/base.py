"""The store's engine and transaction helpers, shared by its transition modules."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, insert, select, text

from orchestrator.store.core import models as m
from orchestrator.store.core.db import DbOptions, make_engine
from orchestrator.store.core.identity import DatabaseGoneError, FilePin, sqlite_path

if TYPE_CHECKING:
    from orchestrator.settings import Settings

DEFAULT_MAX_LOST_TRIES = 2  # the setting ORCHESTRATOR_MAX_LOST_TRIES's default


class StoreBase:
    """Owns the engine. Subclasses add the transitions they own.

    ``max_lost_tries`` is the bound on tries lost to infrastructure that do not count
    against a task's retries, for tasks whose DAG file sets none (the setting
    ``ORCHESTRATOR_MAX_LOST_TRIES``).

    ``settings`` (or ``options``) shape the sessions: SQLite durability and the
    PostgreSQL wait bounds derived from the lease (:class:`~orchestrator.store.core.db.DbOptions`);
    without them the defaults for a 30 s lease apply.
    """

    def __init__(
        self,
        url: str,
        *,
        engine: Engine | None = None,
        settings: Settings | None = None,
        options: DbOptions | None = None,
        max_lost_tries: int | None = None,
    ) -> None:
        self.url = url
        self.options = options or DbOptions.from_settings(settings)
        self.engine = engine or make_engine(url, options=self.options)
        if max_lost_tries is None:
            max_lost_tries = settings.max_lost_tries if settings else DEFAULT_MAX_LOST_TRIES
        self.max_lost_tries = max_lost_tries
        if settings is not None:
            self.max_conf_bytes = settings.max_conf_bytes
        # issue 24: the longest chain of runs trigger_dag tasks may make
        self.max_trigger_depth = settings.max_trigger_depth if settings else 10
        # the most instances one mapped task expands into (issue 14)
        self.max_map_length = settings.max_map_length if settings else 10_000
        self.dialect = self.engine.dialect.name
        path = sqlite_path(url) if self.dialect == "sqlite" else None
        self._pin = FilePin(path) if path is not None else None
        self._specs: dict[str, object] = {}
        # judge the leader lease by the database's clock (real deployments), not the
        # caller's `now` (tests with a fake clock)
        self.db_clock = False

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    def identity_problem(self) -> str | None:
        """None while the database is the one this store opened; else what happened to
        it (a SQLite file deleted or replaced). Two system calls: cheap enough to run
        before every write."""
        return self._pin.check() if self._pin is not None else None

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite), committed on success.

        Refused (:class:`DatabaseGoneError`) once the database file was deleted or
        replaced under this process: writing on would only lose more.
        """
        problem = self.identity_problem()
        if problem is not None:
            raise DatabaseGoneError(f"{problem}; writing stopped")
        with self.engine.begin() as conn:
            yield conn

    def probe_write(self) -> None:
        """Prove the database takes a write now, changing nothing: insert a row in a
        write transaction and roll it back (fails on a read-only database, a read-only
        file system or a standby; SQLite takes its write lock)."""
        with self.engine.connect() as conn:
            tx = conn.begin()
            try:
                conn.execute(
                    insert(m.scheduler_lease).values(
                        name=f"health-probe-{uuid.uuid4().hex[:12]}",
                        holder="health",
                        epoch=0,
                        expires_at=datetime.fromtimestamp(0, UTC),
                    )
                )
            finally:
                tx.rollback()

    def notify(self, channel: str) -> None:
        """A PostgreSQL NOTIFY on ``channel`` through the pool (a no-op on SQLite), for
        a process with no :class:`~orchestrator.engine.wakeup.Notifier` of its own."""
        if self.is_postgres:
            with self.engine.begin() as conn:
                conn.execute(text("SELECT pg_notify(:channel, '')"), {"channel": channel})

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction that never blocks writers on SQLite."""
        with self.engine.connect().execution_options(sqlite_read_only=True) as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        self.engine.dispose()
        if self._pin is not None:
            self._pin.close()


def record_event(
    conn: Connection,
    at: object,
    kind: str,
    message: str,
    *,
    dag_id: str | None = None,
    run_id: str | None = None,
    task_id: str | None = None,
    try_number: int | None = None,
    actor: str | None = None,
    map_index: int | None = None,
) -> None:
    """One event; ``actor`` is who asked for it (None: the scheduler's or a worker's
    own decision)."""
    conn.execute(
        insert(m.events).values(
            at=at,
            kind=kind,
            message=message,
            dag_id=dag_id,
            run_id=run_id,
            task_id=task_id,
            try_number=try_number,
            actor=actor[:250] if actor else None,
            map_index=map_index if map_index is not None and map_index >= 0 else None,
        )
    )


def lock_runs(conn: Connection, run_pks: list[int], is_postgres: bool) -> None:
    """Lock DAG run rows for this write transaction, in id order (no deadlocks).

    Transitions that decide from several task instances' states of a run at once
    (release, finish, clear) take these locks first, so they serialise per run on
    PostgreSQL; on SQLite the write transaction's lock already serialises them.
    """
    if is_postgres and run_pks:
        conn.execute(
            select(m.dag_runs.c.id)
            .where(m.dag_runs.c.id.in_(sorted(run_pks)))
            .order_by(m.dag_runs.c.id)
            .with_for_update()
        ).all()
