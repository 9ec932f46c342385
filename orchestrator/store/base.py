"""The store's engine and transaction helpers, shared by its transition modules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, insert, select

from orchestrator.store import models as m
from orchestrator.store.db import make_engine

DEFAULT_MAX_LOST_TRIES = 2  # the setting ORCHESTRATOR_MAX_LOST_TRIES's default


class StoreBase:
    """Owns the engine. Subclasses add the transitions they own.

    ``max_lost_tries`` is the bound on tries lost to infrastructure that do not count
    against a task's retries, for tasks whose DAG file sets none (the setting
    ``ORCHESTRATOR_MAX_LOST_TRIES``).
    """

    def __init__(
        self,
        url: str,
        *,
        engine: Engine | None = None,
        max_lost_tries: int = DEFAULT_MAX_LOST_TRIES,
    ) -> None:
        self.url = url
        self.max_lost_tries = max_lost_tries
        self.engine = engine or make_engine(url)
        self.dialect = self.engine.dialect.name
        self._specs: dict[str, object] = {}
        # judge the leader lease by the database's clock (real deployments), not the
        # caller's `now` (tests with a fake clock)
        self.db_clock = False

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite), committed on success."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction that never blocks writers on SQLite."""
        with self.engine.connect().execution_options(sqlite_read_only=True) as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        self.engine.dispose()


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
) -> None:
    conn.execute(
        insert(m.events).values(
            at=at,
            kind=kind,
            message=message,
            dag_id=dag_id,
            run_id=run_id,
            task_id=task_id,
            try_number=try_number,
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
