"""Frozen records built from rows: what crosses the store's boundary."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


class Record:
    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (shallow: no deep copy, which ``asdict``
        makes of every dict and list and which dominated a 10,000-task run's API)."""
        names = _FIELDS.get(type(self))
        if names is None:
            names = _FIELDS[type(self)] = tuple(f.name for f in fields(self))  # type: ignore[arg-type]
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if type(value) in _PLAIN:
                out[name] = value
            elif isinstance(value, datetime):
                out[name] = value.isoformat()
            elif isinstance(value, tuple | list):
                out[name] = [asdict(x) if is_dataclass(x) else x for x in value]  # type: ignore[arg-type]
            elif is_dataclass(value) and not isinstance(value, type):
                out[name] = asdict(value)
            else:
                out[name] = value
        return out


_PLAIN = frozenset({str, int, float, bool, type(None), dict})
_FIELDS: dict[type, tuple[str, ...]] = {}  # field names by record class, looked up once


@dataclass(frozen=True)
class DagRecord(Record):
    dag_id: str
    fileloc: str
    is_paused: bool
    is_active: bool
    version_hash: str
    schedule: str
    description: str | None
    timezone: str
    tags: tuple[str, ...]
    next_logical_date: datetime | None
    schedule_exhausted: bool
    last_parsed_at: datetime
    owners: tuple[str, ...] = ()  # the owners of its tasks (issue 27)

    @classmethod
    def from_row(cls, row: Any) -> DagRecord:
        return cls(
            dag_id=row.dag_id,
            fileloc=row.fileloc,
            is_paused=bool(row.is_paused),
            is_active=bool(row.is_active),
            version_hash=row.version_hash,
            schedule=row.schedule_desc,
            description=row.description,
            timezone=row.timezone,
            tags=tuple(json.loads(row.tags or "[]")),
            next_logical_date=row.next_logical_date,
            schedule_exhausted=bool(row.schedule_exhausted),
            last_parsed_at=row.last_parsed_at,
            owners=tuple(json.loads(row.owners or "[]")),
        )


@dataclass(frozen=True)
class SourceRecord(Record):
    """The DAG file's text stored with a version when the DAG processor parsed it."""

    sha256: str  # of the whole file
    text: str  # its first MAX_SOURCE_BYTES bytes, decoded
    size: int  # of the whole file, in bytes
    truncated: bool
    created_at: datetime


@dataclass(frozen=True)
class ImportErrorRecord(Record):
    fileloc: str
    message: str
    traceback: str | None
    created_at: datetime


@dataclass(frozen=True)
class RunRecord(Record):
    id: int
    run_id: str
    dag_id: str
    run_type: str
    logical_date: datetime
    data_interval_start: datetime
    data_interval_end: datetime
    state: str
    conf: dict[str, Any]
    version_hash: str
    created_at: datetime
    start_date: datetime | None
    end_date: datetime | None
    # who asked for the run: "cli:USER@HOST", "web:USER", "api:USER" (manual and
    # backfill runs); None for the scheduler's own runs
    triggered_by: str | None = None

    @classmethod
    def from_row(cls, row: Any) -> RunRecord:
        return cls(
            id=row.id,
            run_id=row.run_id,
            dag_id=row.dag_id,
            run_type=row.run_type,
            logical_date=row.logical_date,
            data_interval_start=row.data_interval_start,
            data_interval_end=row.data_interval_end,
            state=row.state,
            conf=json.loads(row.conf or "{}"),
            version_hash=row.version_hash,
            created_at=row.created_at,
            start_date=row.start_date,
            end_date=row.end_date,
            triggered_by=row._mapping.get("triggered_by"),
        )


@dataclass(frozen=True)
class TaskInstanceRecord(Record):
    id: int
    dag_id: str
    run_id: str
    task_id: str
    state: str
    try_number: int
    max_tries: int
    queue: str
    owner: str | None
    lease_expires_at: datetime | None
    ready_at: datetime | None
    start_date: datetime | None
    end_date: datetime | None
    error: str | None
    lost_tries: int = 0  # tries lost to infrastructure (lease expired, handed back)
    # 0..n-1 for the instances of a mapped task, -1 otherwise (issue 14)
    map_index: int = -1
    map_kwargs: str | None = None  # a mapped instance's arguments (JSON object)
    rendered_map_index: str | None = None  # issue 25 item 7: its map_index_template name
    # a sensor's current try (issue 15): its first poke, and pokes that found it unmet
    first_poke_at: datetime | None = None
    poke_count: int = 0
    # issue 30: a deferred instance's trigger and deadline; what its resume calls
    trigger_id: int | None = None
    trigger_timeout: datetime | None = None
    next_method: str | None = None

    @classmethod
    def from_row(cls, row: Any) -> TaskInstanceRecord:
        return cls(
            id=row.id,
            dag_id=row.dag_id,
            run_id=row.run_id,
            task_id=row.task_id,
            state=row.state,
            try_number=row.try_number,
            max_tries=row.max_tries,
            queue=row.queue,
            owner=row.owner,
            lease_expires_at=row.lease_expires_at,
            ready_at=row.ready_at,
            start_date=row.start_date,
            end_date=row.end_date,
            error=row.error,
            lost_tries=row.lost_tries,
            map_index=row._mapping.get("map_index", -1),
            map_kwargs=row._mapping.get("map_kwargs"),
            rendered_map_index=row._mapping.get("rendered_map_index"),
            first_poke_at=row.first_poke_at,
            poke_count=row.poke_count,
            trigger_id=row._mapping.get("trigger_id"),
            trigger_timeout=row._mapping.get("trigger_timeout"),
            next_method=row._mapping.get("next_method"),
        )


# tries recorded before 0008 kept their own states for what is now state 'lost'
LEGACY_LOST_STATES = ("lease_expired", "handed_back")


@dataclass(frozen=True)
class TryRecord(Record):
    ti_id: int
    dag_id: str
    run_id: str
    task_id: str
    try_number: int
    worker: str
    state: str
    start_date: datetime
    end_date: datetime | None
    exit_status: int | None
    error: str | None
    log_path: str | None
    # why a try was lost to infrastructure (lease_expired, handed_back); None otherwise
    lost_reason: str | None = None
    map_index: int = -1  # the map index of the try's task instance (issue 14)

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    @classmethod
    def from_row(cls, row: Any) -> TryRecord:
        return cls(
            ti_id=row.ti_id,
            dag_id=row.dag_id,
            run_id=row.run_id,
            task_id=row.task_id,
            try_number=row.try_number,
            worker=row.worker,
            state=row.state,
            start_date=row.start_date,
            end_date=row.end_date,
            exit_status=row.exit_status,
            error=row.error,
            log_path=row.log_path,
            lost_reason=row.lost_reason or (row.state if row.state in LEGACY_LOST_STATES else None),
            map_index=row._mapping.get("map_index", -1),
        )


@dataclass(frozen=True)
class EventRecord(Record):
    id: int
    at: datetime
    kind: str
    dag_id: str | None
    run_id: str | None
    task_id: str | None
    try_number: int | None
    message: str
    # who asked: "web:ada", "api:ada/token:ci", "cli:root@host"; None: the system
    actor: str | None = None
    map_index: int | None = None  # the mapped task instance it is about (issue 14)


@dataclass(frozen=True)
class Claim(Record):
    """A task instance attempt a worker now holds under a lease."""

    ti_id: int
    dag_id: str
    run_id: str
    task_id: str
    try_number: int
    max_tries: int
    owner: str
    lease_expires_at: datetime
    logical_date: datetime
    data_interval_start: datetime
    data_interval_end: datetime
    conf: dict[str, Any]
    version_hash: str
    log_path: str
    # the results of its upstream tasks (``ctx.upstream``), when the claim asked for them
    upstream_results: dict[str, str] | None = None
    # a mapped task's instance: its map index and its mapped arguments (JSON object)
    map_index: int = -1
    map_kwargs: str | None = None
    # a sensor's earlier pokes in this try (issue 15): > 0 means this claim reopened it
    poke_count: int = 0
    # issue 30: set when this claim resumes a deferred try (its trigger fired): the
    # function its process calls, and the JSON of {"event": ..., "kwargs": ...}
    next_method: str | None = None
    next_kwargs: str | None = None
    run_type: str = "manual"  # issue 26: {{ dag_run.run_type }}


@dataclass(frozen=True)
class BackfillRecord(Record):
    """A stored backfill and how far its runs have got (``runs``: state -> count)."""

    id: int
    dag_id: str
    range_start: datetime
    range_end: datetime
    max_active_runs: int
    reverse: bool
    state: str
    total: int
    created_at: datetime
    end_date: datetime | None
    runs: dict[str, int]

    @property
    def finished(self) -> int:
        return sum(self.runs.get(s, 0) for s in ("success", "failed", "cancelled"))

    @property
    def failed(self) -> int:
        return self.runs.get("failed", 0)

    @classmethod
    def from_row(cls, row: Any, runs: dict[str, int]) -> BackfillRecord:
        return cls(
            id=row.id,
            dag_id=row.dag_id,
            range_start=row.range_start,
            range_end=row.range_end,
            max_active_runs=row.max_active_runs,
            reverse=bool(row.reverse),
            state=row.state,
            total=row.total,
            created_at=row.created_at,
            end_date=row.end_date,
            runs=dict(runs),
        )


@dataclass(frozen=True)
class DagVersionRecord(Record):
    """One stored version of a DAG (issue 17): numbered 1, 2, ... in the order parsed."""

    dag_id: str
    number: int
    hash: str
    created_at: datetime  # when the DAG processor first stored it
    source_hash: str | None  # the DAG file's text it was parsed from (dag_sources)
    source_size: int | None
    is_current: bool  # the version the scheduler uses now
    runs: int | None = None  # runs created with this version, when asked for
