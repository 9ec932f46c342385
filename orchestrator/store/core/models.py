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
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.types import TypeDecorator

SCHEDULE_RUN_TYPES = "run_type IN ('scheduled', 'backfill')"

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
    # the owners of its tasks, a sorted JSON list like tags (issue 27: the DAG list, 0031)
    Column("owners", Text, nullable=False, default="[]", server_default="[]"),
    Column("next_logical_date", UTCDateTime),
    # from when the scheduler has a run to create (or a cursor to move) for this DAG;
    # NULL: nothing (manual only, exhausted). Read in order, a batch at a time (0034)
    Column("next_dagrun_create_after", UTCDateTime, index=True),
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
    # the DAG file's text this version was parsed from (dag_sources.hash, migration 0010);
    # NULL for versions stored before 0010 or without a source (tests, benchmarks)
    Column("source_hash", String(64)),
    # the web UI's graph layout of this version, computed once on first view (0010)
    Column("layout", Text),
    UniqueConstraint("dag_id", "hash"),
)

# -- DAG file sources (migration 0010) ---------------------------------------------------
# the text of a DAG file as the DAG processor read it when it parsed the file, one row per
# distinct content (sha256 of the whole file), shared by every version parsed from it
dag_sources = Table(
    "dag_sources",
    metadata,
    Column("hash", String(64), primary_key=True),
    Column("content", Text, nullable=False),  # at most MAX_SOURCE_BYTES of the file
    Column("size", BigInteger, nullable=False),  # the whole file, in bytes
    Column("truncated", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
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
    # the backfill that created (or last cleared) this run; NULL for the others
    Column("backfill_id", Id, index=True),
    # who asked for a manual or backfill run ("cli:USER@HOST", "web:USER"); NULL for
    # the scheduler's runs (0011)
    Column("triggered_by", String(250)),
    # how many trigger_dag tasks made this run in a chain: 0 for a run nobody's task
    # made, the triggering run's depth + 1 otherwise (0030, issue 24)
    Column("trigger_depth", Integer, nullable=False, default=0, server_default="0"),
    Index(None, "state", "dag_id"),
    # invariant 1, one run per fire time: scheduled and backfill runs only, so a manual
    # run for the same instant never displaces or blocks the scheduled one
    Index(
        "ux_dag_runs_one_per_fire_time",
        "dag_id",
        "logical_date",
        unique=True,
        sqlite_where=text(SCHEDULE_RUN_TYPES),
        postgresql_where=text(SCHEDULE_RUN_TYPES),
    ),
    Index(None, "dag_id", "logical_date"),
    # a DAG's oldest queued runs without reading its history (run_progress.py, 0007)
    Index(None, "dag_id", "state", "logical_date"),
)

# a backfill: a date range of one DAG whose runs the scheduler starts in its own order
backfills = Table(
    "backfills",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("dag_id", String(250), nullable=False, index=True),
    Column("range_start", UTCDateTime, nullable=False),
    Column("range_end", UTCDateTime, nullable=False),
    Column("max_active_runs", Integer, nullable=False),
    Column("reverse", Boolean, nullable=False, default=False),
    Column("state", String(20), nullable=False),  # running | done | cancelled
    Column("total", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("end_date", UTCDateTime),
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
    Column("pool", String(250)),
    Column("pool_slots", Integer, nullable=False, default=1, server_default="1"),
    Column("owner", String(250)),
    Column("lease_expires_at", UTCDateTime),
    Column("ready_at", UTCDateTime),
    Column("start_date", UTCDateTime),
    Column("end_date", UTCDateTime),
    Column("result", Text),
    Column("error", Text),
    # tries lost to infrastructure so far, not held against retries up to max_lost_tries (0008)
    Column("lost_tries", Integer, nullable=False, default=0, server_default="0"),
    # issue 14 (0013): claims take higher priority first; a gated instance (depends_on_past,
    # max_active_tasks, max_active_tis_per_dag) is claimed only through store/tasks/concurrency.py
    Column("priority_weight", Integer, nullable=False, default=1, server_default="1"),
    Column("gated", Boolean, nullable=False, default=False, server_default=false()),
    # runtime task mapping (0012): 0..n-1 for the instances of a mapped task, -1 for
    # every other task instance (Airflow's value), and the instance's mapped arguments
    Column("map_index", Integer, nullable=False, default=-1, server_default="-1"),
    Column("map_kwargs", Text),
    # issue 25 item 7: the instance's name from its task's map_index_template
    Column("rendered_map_index", Text),
    UniqueConstraint("run_pk", "task_id", "map_index"),
    # a sensor's current try: when its first poke started (its timeout counts from it)
    # and how many pokes found the condition unmet (0015)
    Column("first_poke_at", UTCDateTime),
    Column("poke_count", Integer, nullable=False, default=0, server_default="0"),
    # its pokes are built-in checks the worker evaluates (no task slot) (0015)
    Column("worker_check", Boolean, nullable=False, default=False, server_default=false()),
    # issue 30 (0028): a deferred instance's trigger and its deadline; what its next try
    # process calls when the trigger fires (Airflow's next_method / next_kwargs)
    Column("trigger_id", Id),
    Column("trigger_timeout", UTCDateTime),
    Column("next_method", String(250)),
    Column("next_kwargs", Text),
    Index(None, "run_id", "task_id"),
    Index(None, "state", "ready_at"),
    Index(None, "owner"),
    Index(None, "run_pk", "state"),  # per-run state counts on the hot path (0006)
    Index(None, "dag_id", "state", "task_id"),  # running counts per DAG and task (0013)
    # the gated claim's candidates without walking the other claimable instances (0013)
    Index(
        "ix_task_instances_gated_ready",
        "state",
        "ready_at",
        sqlite_where=text("gated = 1"),
        postgresql_where=text("gated"),
    ),
    Index(None, "worker_check", "state", "ready_at"),  # due built-in sensors (0015)
    Index(None, "trigger_id"),  # a trigger's task instance (0028)
    Index(None, "state", "trigger_timeout"),  # deferred instances past their timeout (0028)
    # pools with waiting tasks, and their candidates, without the unpooled rows (0020)
    Index(
        "ix_task_instances_pooled_ready",
        "pool",
        "state",
        "ready_at",
        sqlite_where=text("pool IS NOT NULL"),
        postgresql_where=text("pool IS NOT NULL"),
    ),
)

# the claim order, read state by state (store/tasks/claims.py) (0013; in its directions since 0020)
Index(
    "ix_task_instances_claim_order",
    task_instances.c.state,
    task_instances.c.priority_weight.desc(),
    task_instances.c.ready_at,
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
    # why a try with state 'lost' was lost: lease_expired | handed_back (0008)
    Column("lost_reason", String(32)),
    Column("map_index", Integer, nullable=False, default=-1, server_default="-1"),  # 0012
    UniqueConstraint("ti_id", "try_number"),
)

# issue 25 (0032): values a try pushed (``ti.xcom_push(key, value)``), JSON text; a pull
# reads only the rows of the instance's current try (an earlier try's pushes are not its);
# deleted with the instance (cascade), when it is cleared and by retention
task_xcoms = Table(
    "task_xcoms",
    metadata,
    Column("ti_id", Id, ForeignKey("task_instances.id", ondelete="CASCADE"), nullable=False),
    Column("key", String(250), nullable=False),
    Column("try_number", Integer, nullable=False),
    Column("value", Text, nullable=False),
    PrimaryKeyConstraint("ti_id", "key"),
)

# -- try logs shipped to the store by the worker that ran the try (migration 0018) ----------
# the bytes of a try's log file as they were written (secrets already masked), in order:
# ``seq`` 0, 1, 2... each holding bytes [start_byte, end_byte) of the file; keyed by the task
# instance id and try number (no foreign key: retention deletes them with their tries)
log_chunks = Table(
    "log_chunks",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("ti_id", Id, nullable=False),
    Column("try_number", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("start_byte", BigInteger, nullable=False),
    Column("end_byte", BigInteger, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("ti_id", "try_number", "seq"),
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
    Column("map_index", Integer),  # the instance of a mapped task it is about (0012)
    Index(None, "dag_id", "id"),
    # who did it: "web:ada", "api:ada/token:ci", "cli:root@host"; NULL for the
    # scheduler's and workers' own decisions (migration 0019)
    Column("actor", String(250)),
    Index(None, "actor", "id"),
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

# -- pools: named slot limits shared across the cluster (migration 0005) --------------
pools = Table(
    "pools",
    metadata,
    Column("name", String(250), primary_key=True),
    Column("slots", Integer, nullable=False),
    Column("description", Text),
    Column("updated_at", UTCDateTime, nullable=False),
)

# -- scheduler registry for `orchestrator status` (migration 0005) ---------------------
schedulers = Table(
    "schedulers",
    metadata,
    Column("scheduler_id", String(250), primary_key=True),
    Column("hostname", String(250), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    Column("stopped_at", UTCDateTime),
)

# -- web UI logins (migration 0003) ------------------------------------------------------
users = Table(
    "users",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("username", String(100), nullable=False, unique=True),
    Column("password_hash", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # copied into each signed-in session; moved on by logout, password change (0009)
    Column("session_version", Integer, nullable=False, server_default="0"),
    # viewer, operator or admin (migration 0019; logins from before it are admins)
    Column("role", String(20), nullable=False, server_default="admin"),
    # random per row, set at creation and copied into each session: a cookie of a deleted
    # user never fits a later user of the same name (migration 0029, issue 24)
    Column("session_nonce", String(32), nullable=False, server_default="unset"),
)

# API tokens "orc_<token_id>_<secret>": looked up by id, the secret kept as its sha256
# (migration 0019)
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("token_id", String(16), primary_key=True),
    Column("user_id", Id, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("role", String(20), nullable=False),
    Column("secret_hash", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime),
    Column("last_used_at", UTCDateTime),
    Column("revoked_at", UTCDateTime),
    UniqueConstraint("user_id", "name"),
)

# wrong web UI logins, counted per user name and per client address (migration 0009)
login_failures = Table(
    "login_failures",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("at", UTCDateTime, nullable=False),
    Column("username", String(100), nullable=False),
    Column("address", String(100), nullable=False),
    Index(None, "username", "at"),
    Index(None, "address", "at"),
)

# -- alerts (migration 0004) -------------------------------------------------------------
# one row per event: ``key`` (e.g. "run_failed:<run_id>") makes raising it idempotent
alerts = Table(
    "alerts",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("key", String(600), nullable=False, unique=True),
    Column("kind", String(50), nullable=False),
    Column("dag_id", String(250)),
    Column("run_id", String(400)),
    Column("task_id", String(250)),
    Column("try_number", Integer),
    Column("logical_date", UTCDateTime),
    Column("message", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False, index=True),
    Index(None, "dag_id", "id"),
)

# one row per (alert, notifier): delivered by the alert loop, never by the scheduler
alert_deliveries = Table(
    "alert_deliveries",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("alert_id", Id, ForeignKey("alerts.id", ondelete="CASCADE"), nullable=False),
    Column("notifier", String(20), nullable=False),  # webhook | email | callback
    Column("target", Text, nullable=False),  # JSON: the notifier's declaration
    Column("state", String(20), nullable=False),  # pending | delivered | failed
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("lease_until", UTCDateTime),
    Column("last_error", Text),
    Column("delivered_at", UTCDateTime),
    Index(None, "state", "next_attempt_at"),
    Index(None, "alert_id"),
)

# how far the alert watchdog has read the event log
alert_cursors = Table(
    "alert_cursors",
    metadata,
    Column("name", String(50), primary_key=True),
    Column("last_event_id", Id, nullable=False),
)

# issue 16: variables and connections; secret values are Fernet tokens (store/credentials/secret_box.py)
variables = Table(
    "variables",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("key", String(250), nullable=False, unique=True),
    Column("val", Text, nullable=False),  # the text, or its Fernet token when is_encrypted
    Column("is_json", Boolean, nullable=False),
    Column("is_secret", Boolean, nullable=False),  # masked wherever it is read
    Column("is_encrypted", Boolean, nullable=False),
    Column("description", Text),
    Column("updated_at", UTCDateTime, nullable=False),
)

connections = Table(
    "connections",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("conn_id", String(250), nullable=False, unique=True),
    Column("conn_type", String(500), nullable=False),
    Column("description", Text),
    Column("host", String(500)),
    Column("schema", String(500)),
    Column("login", Text),
    Column("password", Text),  # a Fernet token
    Column("port", Integer),
    Column("extra", Text),  # a Fernet token of the JSON object
    Column("updated_at", UTCDateTime, nullable=False),
)

# -- assets and asset events (issue 15, migration 0014) ----------------------------------
# an asset: a URI named by a DAG file (an outlet or a schedule); registered when the DAG
# is saved, so an external emit names a known asset
assets = Table(
    "assets",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("uri", String(1000), nullable=False, unique=True),
    Column("name", String(250), nullable=False),
    Column("group_name", String(250)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

# who produces and who consumes an asset, by the DAGs' current versions: kind is
# 'producer' (task_id = the task with the outlet) or 'consumer' (task_id = '')
asset_refs = Table(
    "asset_refs",
    metadata,
    Column("dag_id", String(250), primary_key=True),
    Column("asset_id", Id, ForeignKey("assets.id", ondelete="CASCADE"), primary_key=True),
    Column("kind", String(20), primary_key=True),
    Column("task_id", String(250), primary_key=True),
    Index(None, "asset_id"),
)

# one row per event: a successful try with the asset in its outlets (source_* set, in
# the try's fenced success transaction; unique per try and asset) or an external emit
asset_events = Table(
    "asset_events",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("asset_id", Id, ForeignKey("assets.id", ondelete="CASCADE"), nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("extra", Text, nullable=False, default="{}"),
    Column("source_dag_id", String(250)),
    Column("source_run_id", String(400)),
    Column("source_task_id", String(250)),
    Column("source_try_number", Integer),
    # the task instance (one per map index, if mapped): one event per try and asset
    Column("source_ti_id", Id),
    Column("emitter", String(250)),  # who emitted an external event (cli:USER@HOST, api:USER)
    UniqueConstraint("asset_id", "source_ti_id", "source_try_number"),
    Index(None, "asset_id", "id"),
)

# each consuming DAG's queue of events not yet consumed: inserted with the event, deleted
# (compare-and-set on the rows) in the transaction that creates the run consuming them
asset_queue = Table(
    "asset_queue",
    metadata,
    Column("dag_id", String(250), primary_key=True),
    Column("event_id", Id, ForeignKey("asset_events.id", ondelete="CASCADE"), primary_key=True),
    Column("asset_id", Id, nullable=False),
    Column("queued_at", UTCDateTime, nullable=False),
)

# the events an asset-triggered run consumed (ctx.triggering_asset_events)
asset_run_events = Table(
    "asset_run_events",
    metadata,
    Column("run_pk", Id, ForeignKey("dag_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("event_id", Id, ForeignKey("asset_events.id", ondelete="CASCADE"), primary_key=True),
    Index(None, "event_id"),
)


# -- issue 30 (migration 0028): triggers, triggerers and asset watchers ----------------
# one row per deferred task instance's trigger: what to build (classpath, kwargs) and
# which triggerer runs it under a lease (NULL or expired: any triggerer may take it)
triggers = Table(
    "triggers",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("classpath", String(500), nullable=False),
    Column("kwargs", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("fileloc", Text),  # the DAG file of the task (a trigger class it defines)
    Column("triggerer_id", String(250)),
    Column("lease_expires_at", UTCDateTime),
    Index(None, "triggerer_id"),
    Index(None, "lease_expires_at"),
)

# registered triggerers (`orchestrator status`, /health, /metrics)
triggerers = Table(
    "triggerers",
    metadata,
    Column("triggerer_id", String(250), primary_key=True),
    Column("hostname", String(250), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("capacity", Integer, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    Column("stopped_at", UTCDateTime),
    Column("triggers", Integer, nullable=False, default=0, server_default="0"),
    Column("watchers", Integer, nullable=False, default=0, server_default="0"),
    # the event loop's lag (seconds) and the last trigger that blocked it, when
    Column("loop_lag", Float, nullable=False, default=0.0, server_default="0"),
    Column("blocked_count", Integer, nullable=False, default=0, server_default="0"),
    Column("blocked_by", Text),
    Column("blocked_at", UTCDateTime),
)

# one row per asset watcher (an asset's watchers=[...]): which triggerer runs it under
# a lease, its connection state, its cursor (PostgreSQL's log) and its counts
watchers = Table(
    "watchers",
    metadata,
    Column("key", String(700), primary_key=True),  # "<asset uri>#<kind>:<source>"
    Column("asset_uri", String(500), nullable=False),
    Column("kind", String(50), nullable=False),
    Column("conn_id", String(250), nullable=False),
    Column("source", String(500), nullable=False),
    Column("spec", Text, nullable=False),  # the watcher's options (JSON)
    Column("active", Boolean, nullable=False, default=True, server_default=true()),
    Column("triggerer_id", String(250)),
    Column("lease_expires_at", UTCDateTime),
    Column("state", String(20), nullable=False, default="idle", server_default="idle"),
    Column("last_error", Text),
    Column("last_error_at", UTCDateTime),
    Column("failures", Integer, nullable=False, default=0, server_default="0"),
    Column("cursor", Text),
    Column("messages", BigInteger, nullable=False, default=0, server_default="0"),
    Column("rejected", BigInteger, nullable=False, default=0, server_default="0"),
    Column("last_message_at", UTCDateTime),
    Column("updated_at", UTCDateTime, nullable=False),
)

# the message ids a watcher has turned into events: a redelivered message (a crash
# between commit and ack) finds its id here and is acked without a second event
watcher_messages = Table(
    "watcher_messages",
    metadata,
    Column("watcher_key", String(700), primary_key=True),
    Column("message_id", String(500), primary_key=True),
    Column("event_id", Id),  # None: rejected (the reason is in the events table)
    Column("at", UTCDateTime, nullable=False),
    Index(None, "at"),
)
