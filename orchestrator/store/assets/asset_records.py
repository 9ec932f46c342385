"""Frozen records of assets and asset events: what leaves the asset store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.store.core.records import Record


@dataclass(frozen=True)
class AssetRecord(Record):
    """An asset, who produces it (dag_id, task_id) and who is scheduled on it."""

    id: int
    uri: str
    name: str
    group: str | None
    created_at: datetime
    producers: tuple[tuple[str, str], ...] = ()
    consumers: tuple[str, ...] = ()
    last_event_at: datetime | None = None
    events: int = 0


@dataclass(frozen=True)
class AssetEventRecord(Record):
    """One asset event: from a task's successful try (source_*) or an external emitter.

    ``triggered_runs`` are the run_ids of the runs that consumed it.
    """

    id: int
    asset_id: int
    uri: str
    at: datetime
    extra: dict[str, Any]
    source_dag_id: str | None
    source_run_id: str | None
    source_task_id: str | None
    source_try_number: int | None
    emitter: str | None
    triggered_runs: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row: Any, triggered: tuple[str, ...] = ()) -> AssetEventRecord:
        return cls(
            id=row.id,
            asset_id=row.asset_id,
            uri=row.uri,
            at=row.at,
            extra=json.loads(row.extra or "{}"),
            source_dag_id=row.source_dag_id,
            source_run_id=row.source_run_id,
            source_task_id=row.source_task_id,
            source_try_number=row.source_try_number,
            emitter=row.emitter,
            triggered_runs=triggered,
        )

    @property
    def made_by(self) -> str:
        """The run and task that made it, or its external emitter."""
        if self.source_run_id:
            return f"{self.source_run_id}.{self.source_task_id} (try {self.source_try_number})"
        return f"emitted by {self.emitter or 'an external producer'}"
