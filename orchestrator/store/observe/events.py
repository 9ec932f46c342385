"""The event log: every decision the scheduler and workers make, with its reason, and
every change a person asked for, with who asked (``actor``)."""

from __future__ import annotations

from sqlalchemy import ColumnElement, or_, select

from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import EventRecord


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def actor_filter(actor: str) -> ColumnElement[bool]:
    """Events by ``actor``: exactly it, or what it covers.

    ``api:ada`` matches ``api:ada`` and ada's tokens (``api:ada/token:ci``);
    ``cli:root`` matches ``cli:root@host1``; a bare name (``ada``, no ``:``) matches
    that user on every channel (``web:ada``, ``api:ada/token:ci``, ``cli:ada@host``);
    ``system`` matches the scheduler's and workers' own decisions (no actor).
    """
    a = m.events.c.actor
    if actor == "system":
        return a.is_(None)
    channels = ("web", "api", "cli")
    heads = [actor] if ":" in actor else [f"{channel}:{actor}" for channel in channels]
    clauses: list[ColumnElement[bool]] = []
    for head in heads:
        clauses += [
            a == head,
            a.like(_like(head) + "/%", escape="\\"),
            a.like(_like(head) + "@%", escape="\\"),
        ]
    return or_(*clauses)


class EventStore(StoreBase):
    def events(
        self,
        *,
        dag_id: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        actor: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[EventRecord]:
        """Events newest first, filtered; ``before`` (an event id) pages back in time;
        ``actor`` as :func:`actor_filter` reads it."""
        e = m.events
        q = select(e).order_by(e.c.id.desc()).limit(limit)
        if dag_id:
            q = q.where(e.c.dag_id == dag_id)
        if run_id:
            q = q.where(e.c.run_id == run_id)
        if kind:
            q = q.where(e.c.kind == kind)
        if actor:
            q = q.where(actor_filter(actor))
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
                    r.actor,
                    r.map_index,
                )
                for r in conn.execute(q)
            ]
