"""The scheduler leader lease: one row, a holder, an epoch and an expiry."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from orchestrator.store import models as m
from orchestrator.store.base import StoreBase, record_event

LEASE_NAME = "scheduler"


class LeaderStore(StoreBase):
    def acquire_leadership(self, holder: str, now: datetime, ttl: timedelta) -> int | None:
        """Take or renew the leader lease. Returns the epoch held, or None if another holds it.

        Renewal keeps the epoch; a takeover (after expiry) bumps it, so writes fenced on
        an old epoch can be told apart.
        """
        lease = m.scheduler_lease
        expires = now + ttl
        with self.write() as conn:
            row = conn.execute(select(lease).where(lease.c.name == LEASE_NAME)).first()
            if row is None:
                try:
                    with conn.begin_nested():
                        conn.execute(
                            insert(lease).values(
                                name=LEASE_NAME, holder=holder, epoch=1, expires_at=expires
                            )
                        )
                except IntegrityError:
                    return None
                record_event(
                    conn, now, "leader_acquired", f"scheduler {holder} became leader (epoch 1)"
                )
                return 1
            if row.holder == holder and row.expires_at >= now:
                done = conn.execute(
                    update(lease)
                    .where(
                        lease.c.name == LEASE_NAME,
                        lease.c.holder == holder,
                        lease.c.epoch == row.epoch,
                    )
                    .values(expires_at=expires)
                ).rowcount
                return row.epoch if done else None
            if row.expires_at < now:
                epoch = row.epoch + 1
                done = conn.execute(
                    update(lease)
                    .where(lease.c.name == LEASE_NAME, lease.c.epoch == row.epoch)
                    .values(holder=holder, epoch=epoch, expires_at=expires)
                ).rowcount
                if done:
                    record_event(
                        conn,
                        now,
                        "leader_acquired",
                        f"scheduler {holder} became leader (epoch {epoch})",
                    )
                    return epoch
            return None

    def release_leadership(self, holder: str) -> None:
        lease = m.scheduler_lease
        with self.write() as conn:
            conn.execute(
                update(lease)
                .where(lease.c.name == LEASE_NAME, lease.c.holder == holder)
                .values(expires_at=datetime.fromtimestamp(0).astimezone())
            )

    def leader(self) -> tuple[str, int, datetime] | None:
        with self.read() as conn:
            row = conn.execute(select(m.scheduler_lease)).first()
        return None if row is None else (row.holder, row.epoch, row.expires_at)
