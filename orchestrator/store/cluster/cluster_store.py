"""What the cluster looks like right now: leader, schedulers, workers, running tasks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, insert, select, update

from orchestrator.states import TaskState
from orchestrator.store.cluster.leader import LEASE_NAME, database_now
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import Record


@dataclass(frozen=True)
class SchedulerStatus(Record):
    scheduler_id: str
    hostname: str
    pid: int
    heartbeat_at: datetime
    is_leader: bool
    alive: bool


@dataclass(frozen=True)
class WorkerStatus(Record):
    worker_id: str
    hostname: str
    pid: int
    queues: tuple[str, ...]
    heartbeat_at: datetime
    alive: bool
    running: int


@dataclass(frozen=True)
class ClusterStatus(Record):
    now: datetime
    leader: str | None
    leader_epoch: int | None
    leader_expires_at: datetime | None
    schedulers: tuple[SchedulerStatus, ...]
    workers: tuple[WorkerStatus, ...]
    running_tasks: int
    queued_tasks: dict[str, int]


class ClusterStore(StoreBase):
    def cluster_status(self, *, alive_within: timedelta) -> ClusterStatus:
        """Processes that reported within ``alive_within`` (by the database clock) are alive."""
        ti = m.task_instances
        with self.read() as conn:
            now = database_now(conn)
            lease = conn.execute(
                select(m.scheduler_lease).where(m.scheduler_lease.c.name == LEASE_NAME)
            ).first()
            leader = lease.holder if lease is not None and lease.expires_at >= now else None
            scheds = conn.execute(
                select(m.schedulers)
                .where(m.schedulers.c.stopped_at.is_(None))
                .order_by(m.schedulers.c.scheduler_id)
            ).all()
            workers = conn.execute(
                select(m.workers)
                .where(m.workers.c.stopped_at.is_(None))
                .order_by(m.workers.c.worker_id)
            ).all()
            running = dict(
                conn.execute(
                    select(ti.c.owner, func.count())
                    .where(ti.c.state == TaskState.RUNNING)
                    .group_by(ti.c.owner)
                ).all()
            )
            queued = dict(
                conn.execute(
                    select(ti.c.queue, func.count())
                    .where(ti.c.state.in_([TaskState.QUEUED, TaskState.UP_FOR_RETRY]))
                    .group_by(ti.c.queue)
                ).all()
            )
        cutoff = now - alive_within
        return ClusterStatus(
            now=now,
            leader=leader,
            leader_epoch=lease.epoch if lease is not None else None,
            leader_expires_at=lease.expires_at if lease is not None else None,
            schedulers=tuple(
                SchedulerStatus(
                    s.scheduler_id,
                    s.hostname,
                    s.pid,
                    s.heartbeat_at,
                    s.scheduler_id == leader,
                    s.heartbeat_at >= cutoff,
                )
                for s in scheds
            ),
            workers=tuple(
                WorkerStatus(
                    w.worker_id,
                    w.hostname,
                    w.pid,
                    tuple(w.queues.split(",")),
                    w.heartbeat_at,
                    w.heartbeat_at >= cutoff,
                    running.get(w.worker_id, 0),
                )
                for w in workers
            ),
            running_tasks=sum(running.values()),
            queued_tasks=queued,
        )

    def register_worker(
        self, worker_id: str, hostname: str, pid: int, queues: list[str], now: datetime
    ) -> None:
        w = m.workers
        with self.write() as conn:
            if conn.execute(select(w.c.worker_id).where(w.c.worker_id == worker_id)).first():
                conn.execute(
                    update(w)
                    .where(w.c.worker_id == worker_id)
                    .values(heartbeat_at=now, stopped_at=None)
                )
            else:
                conn.execute(
                    insert(w).values(
                        worker_id=worker_id,
                        hostname=hostname,
                        pid=pid,
                        queues=",".join(queues),
                        started_at=now,
                        heartbeat_at=now,
                    )
                )

    def worker_stopped(self, worker_id: str, now: datetime) -> None:
        """A worker shut down cleanly: ``status`` stops listing it."""
        with self.write() as conn:
            conn.execute(
                update(m.workers)
                .where(m.workers.c.worker_id == worker_id)
                .values(heartbeat_at=now, stopped_at=now)
            )
