"""The event log: every decision the scheduler and workers make, with its reason."""

from __future__ import annotations

from sqlalchemy import select

from orchestrator.store import models as m
from orchestrator.store.base import StoreBase
from orchestrator.store.records import EventRecord


class EventStore(StoreBase):
    def events(
        self,
        *,
        dag_id: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[EventRecord]:
        """Events newest first, filtered; ``before`` (an event id) pages back in time."""
        e = m.events
        q = select(e).order_by(e.c.id.desc()).limit(limit)
        if dag_id:
            q = q.where(e.c.dag_id == dag_id)
        if run_id:
            q = q.where(e.c.run_id == run_id)
        if kind:
            q = q.where(e.c.kind == kind)
        if before:
            q = q.where(e.c.id < before)
        with self.read() as conn:
            return [
                EventRecord(
                    r.id,
                    r.at,
                    r.kind,
                    r.dag_id,
                    r.run_id,
                    r.task_id,
                    r.try_number,
                    r.message,
                    r.map_index,
                )
                for r in conn.execute(q)
            ]
