"""The metadata schema (SQLAlchemy Core). Changed only together with a migration.

Every timestamp column is :class:`UTCDateTime`: timezone-aware UTC in Python,
``timestamptz`` on PostgreSQL, an ISO-ordered UTC string on SQLite. States and JSON
are plain text so adding a state never needs an enum migration.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

Id = BigInteger().with_variant(Integer(), "sqlite")  # sqlite autoincrement needs INTEGER


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out; naive values are refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r} cannot be stored: use UTC")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


dags = Table(
    "dags",
    metadata,
    Column("dag_id", String(250), primary_key=True),
    Column("fileloc", Text, nullable=False),
    Column("is_paused", Boolean, nullable=False, default=False),
    Column("is_active", Boolean, nullable=False, default=True),
    Column("version_hash", String(64), nullable=False),
    Column("schedule_sig", Text, nullable=False),
    Column("schedule_desc", Text, nullable=False),
    Column("description", Text),
    Column("timezone", String(64), nullable=False),
    Column("tags", Text, nullable=False, default="[]"),
    Column("next_logical_date", UTCDateTime),
    # True once the schedule has no fire times left (end_date passed, @once fired)
    Column("schedule_exhausted", Boolean, nullable=False, default=False),
    Column("last_parsed_at", UTCDateTime, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

dag_versions = Table(
    "dag_versions",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("dag_id", String(250), nullable=False),
    Column("hash", String(64), nullable=False),
    Column("data", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("dag_id", "hash"),
)

import_errors = Table(
    "import_errors",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("fileloc", Text, nullable=False, unique=True),
    Column("message", Text, nullable=False),
    Column("traceback", Text),
    Column("created_at", UTCDateTime, nullable=False),
)

dag_runs = Table(
    "dag_runs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("run_id", String(400), nullable=False, unique=True),
    Column("dag_id", String(250), nullable=False),
    Column("version_hash", String(64), nullable=False),
    Column("run_type", String(20), nullable=False),
    Column("logical_date", UTCDateTime, nullable=False),
    Column("data_interval_start", UTCDateTime, nullable=False),
    Column("data_interval_end", UTCDateTime, nullable=False),
    Column("state", String(20), nullable=False),
    Column("conf", Text, nullable=False, default="{}"),
    Column("created_at", UTCDateTime, nullable=False),
    Column("start_date", UTCDateTime),
    Column("end_date", UTCDateTime),
    UniqueConstraint("dag_id", "logical_date"),
    Index(None, "state", "dag_id"),
)

task_instances = Table(
    "task_instances",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("run_pk", Id, ForeignKey("dag_runs.id", ondelete="CASCADE"), nullable=False),
    Column("dag_id", String(250), nullable=False),
    Column("run_id", String(400), nullable=False),
    Column("task_id", String(250), nullable=False),
    Column("state", String(20), nullable=False),
    Column("try_number", Integer, nullable=False, default=0),
    Column("max_tries", Integer, nullable=False),
    Column("queue", String(250), nullable=False),
    Column("owner", String(250)),
    Column("lease_expires_at", UTCDateTime),
    Column("ready_at", UTCDateTime),
    Column("start_date", UTCDateTime),
    Column("end_date", UTCDateTime),
    Column("result", Text),
    Column("error", Text),
    UniqueConstraint("run_pk", "task_id"),
    Index(None, "run_id", "task_id"),
    Index(None, "state", "ready_at"),
    Index(None, "owner"),
)

task_tries = Table(
    "task_tries",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("ti_id", Id, ForeignKey("task_instances.id", ondelete="CASCADE"), nullable=False),
    Column("dag_id", String(250), nullable=False),
    Column("run_id", String(400), nullable=False),
    Column("task_id", String(250), nullable=False),
    Column("try_number", Integer, nullable=False),
    Column("worker", String(250), nullable=False),
    Column("state", String(20), nullable=False),
    Column("start_date", UTCDateTime, nullable=False),
    Column("end_date", UTCDateTime),
    Column("exit_status", Integer),
    Column("error", Text),
    Column("log_path", Text),
    UniqueConstraint("ti_id", "try_number"),
)

events = Table(
    "events",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime, nullable=False),
    Column("kind", String(50), nullable=False),
    Column("dag_id", String(250)),
    Column("run_id", String(400)),
    Column("task_id", String(250)),
    Column("try_number", Integer),
    Column("message", Text, nullable=False),
    Index(None, "dag_id", "id"),
)

scheduler_lease = Table(
    "scheduler_lease",
    metadata,
    Column("name", String(50), primary_key=True),
    Column("holder", String(250), nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)

workers = Table(
    "workers",
    metadata,
    Column("worker_id", String(250), primary_key=True),
    Column("hostname", String(250), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("queues", Text, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    Column("stopped_at", UTCDateTime),
)
