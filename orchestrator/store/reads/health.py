"""What ``/health`` judges the cluster by: the leader lease and the workers'
heartbeats, read in one transaction (``webui/views/health.py`` judges them).

>>> store.health_facts().workers_alive(since=now - lease)  # doctest: +SKIP
2
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from orchestrator.store.cluster.leader import LEASE_NAME
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import Record


@dataclass(frozen=True)
class HealthFacts(Record):
    """What ``/health`` judges the cluster by, read in one transaction."""

    leader: str | None
    lease_expires_at: datetime | None
    heartbeats: tuple[datetime, ...]  # the last heartbeat of each worker not stopped

    def workers_alive(self, since: datetime) -> int:
        return sum(1 for at in self.heartbeats if at >= since)

    @property
    def last_worker_heartbeat(self) -> datetime | None:
        return max(self.heartbeats, default=None)


class HealthStore(StoreBase):
    def health_facts(self) -> HealthFacts:
        """The leader lease, and the last heartbeat of every worker that has not stopped."""
        w, lease_table = m.workers, m.scheduler_lease
        with self.read() as conn:
            lease = conn.execute(
                select(lease_table.c.holder, lease_table.c.expires_at).where(
                    lease_table.c.name == LEASE_NAME
                )
            ).first()
            beats = conn.execute(select(w.c.heartbeat_at).where(w.c.stopped_at.is_(None))).scalars()
            heartbeats = tuple(sorted(at for at in beats if at is not None))
        return HealthFacts(
            leader=lease.holder if lease is not None else None,
            lease_expires_at=lease.expires_at if lease is not None else None,
            heartbeats=heartbeats,
        )
