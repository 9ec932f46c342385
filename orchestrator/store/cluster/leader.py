"""The scheduler leader lease: one row, a holder, an epoch and an expiry.

With ``store.db_clock`` set (every real deployment), expiry is judged by the
database's clock, so hosts with skewed clocks still agree on who leads. Tests leave
it unset and drive the lease with a fake clock. Every scheduler also records itself
in the ``schedulers`` table on each attempt, for ``orchestrator status``.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event

LEASE_NAME = "scheduler"


def database_now(conn: Connection) -> datetime:
    """The database server's current time, aware UTC."""
    if conn.dialect.name == "postgresql":
        return conn.execute(text("SELECT clock_timestamp()")).scalar_one().astimezone(UTC)
    raw = conn.execute(text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")).scalar_one()
    return datetime.fromisoformat(raw).replace(tzinfo=UTC)


class LeaderStore(StoreBase):
    def acquire_leadership(self, holder: str, now: datetime, ttl: timedelta) -> int | None:
        """Take or renew the leader lease. Returns the epoch held, or None if another holds it.

        Renewal keeps the epoch; a takeover (after expiry) bumps it, so writes fenced on
        an old epoch can be told apart.
        """
        lease = m.scheduler_lease
        with self.write() as conn:
            if self.db_clock:
                now = database_now(conn)
            self._register_scheduler(conn, holder, now)
            expires = now + ttl
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
                        f"scheduler {holder} became leader (epoch {epoch}); "
                        f"{row.holder}'s lease expired at {row.expires_at.isoformat()}",
                    )
                    return epoch
            return None

    def _register_scheduler(self, conn: Connection, scheduler_id: str, now: datetime) -> None:
        s = m.schedulers
        done = conn.execute(
            update(s)
            .where(s.c.scheduler_id == scheduler_id)
            .values(heartbeat_at=now, stopped_at=None)
        ).rowcount
        if not done:
            conn.execute(
                insert(s).values(
                    scheduler_id=scheduler_id,
                    hostname=socket.gethostname(),
                    pid=os.getpid(),
                    started_at=now,
                    heartbeat_at=now,
                )
            )

    def release_leadership(self, holder: str) -> None:
        """Give the lease up at once (clean shutdown), so a standby takes over now."""
        lease = m.scheduler_lease
        with self.write() as conn:
            conn.execute(
                update(lease)
                .where(lease.c.name == LEASE_NAME, lease.c.holder == holder)
                .values(expires_at=datetime.fromtimestamp(0, UTC))
            )
            conn.execute(
                update(m.schedulers)
                .where(m.schedulers.c.scheduler_id == holder)
                .values(stopped_at=database_now(conn))
            )

    def leader(self) -> tuple[str, int, datetime] | None:
        with self.read() as conn:
            row = conn.execute(select(m.scheduler_lease)).first()
        return None if row is None else (row.holder, row.epoch, row.expires_at)
