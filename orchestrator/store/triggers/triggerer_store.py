"""Registered triggerers: who runs triggers and watchers, how busy each is and how late
its event loop runs (``orchestrator status``, /health, /metrics) (issue 30)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select, update

from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import Record

tg = m.triggerers


@dataclass(frozen=True)
class TriggererRecord(Record):
    triggerer_id: str
    hostname: str
    pid: int
    capacity: int
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None
    triggers: int
    watchers: int
    loop_lag: float
    blocked_count: int
    blocked_by: str | None
    blocked_at: datetime | None


class TriggererStore(StoreBase):
    def register_triggerer(
        self, triggerer_id: str, hostname: str, pid: int, capacity: int, now: datetime
    ) -> None:
        """Register (or, for an id seen before, restart) a triggerer."""
        values = {"hostname": hostname, "pid": pid, "capacity": capacity, "started_at": now,
                  "heartbeat_at": now, "stopped_at": None}  # fmt: skip
        with self.write() as conn:
            done = conn.execute(
                update(tg).where(tg.c.triggerer_id == triggerer_id).values(**values)
            ).rowcount
            if not done:
                conn.execute(insert(tg).values(triggerer_id=triggerer_id, **values))

    def triggerer_heartbeat(
        self, triggerer_id: str, now: datetime, *, triggers: int, watchers: int, loop_lag: float
    ) -> None:
        with self.write() as conn:
            conn.execute(
                update(tg)
                .where(tg.c.triggerer_id == triggerer_id)
                .values(heartbeat_at=now, triggers=triggers, watchers=watchers, loop_lag=loop_lag)
            )

    def triggerer_blocked(self, triggerer_id: str, now: datetime, *, by: str, lag: float) -> None:
        """The triggerer's event loop was blocked (``by`` names the trigger and where)."""
        with self.write() as conn:
            conn.execute(
                update(tg)
                .where(tg.c.triggerer_id == triggerer_id)
                .values(
                    blocked_count=tg.c.blocked_count + 1,
                    blocked_by=by[:2000],
                    blocked_at=now,
                    loop_lag=lag,
                )
            )

    def stop_triggerer(self, triggerer_id: str, now: datetime) -> None:
        with self.write() as conn:
            conn.execute(update(tg).where(tg.c.triggerer_id == triggerer_id).values(stopped_at=now))

    def triggerers(self, *, include_stopped: bool = False) -> list[TriggererRecord]:
        q = select(tg).order_by(tg.c.triggerer_id)
        if not include_stopped:
            q = q.where(tg.c.stopped_at.is_(None))
        with self.read() as conn:
            return [TriggererRecord(**r._mapping) for r in conn.execute(q)]
