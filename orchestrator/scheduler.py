"""The scheduler: a ``tick(now)`` that moves DAG runs forward, and a thin loop.

Each tick, if this scheduler holds the leader lease, it creates due runs (misfire
policy applied), starts queued runs within max_active_runs, reaps expired leases,
releases tasks whose trigger rules are met, and finishes runs.

>>> scheduler = Scheduler(store, clock, settings)      # doctest: +SKIP
>>> scheduler.tick(clock.now())                        # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from orchestrator.clock import Clock
from orchestrator.misfire import plan
from orchestrator.settings import Settings
from orchestrator.store import Store

log = logging.getLogger(__name__)


@dataclass
class TickResult:
    leader: bool
    runs_created: int = 0
    runs_started: list[str] = field(default_factory=list)
    released: int = 0
    reaped: list = field(default_factory=list)
    runs_finished: list = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return bool(
            self.runs_created
            or self.runs_started
            or self.released
            or self.reaped
            or self.runs_finished
        )


class Scheduler:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        settings: Settings,
        *,
        scheduler_id: str | None = None,
        wake: threading.Event | None = None,
        on_release: threading.Event | None = None,
        batch: int = 500,
    ) -> None:
        self.store = store
        self.clock = clock
        self.settings = settings
        self.id = scheduler_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.wake = wake or threading.Event()
        self.on_release = on_release
        self.batch = batch
        self.lease_ttl = timedelta(seconds=settings.lease_seconds)

    def tick(self, now: datetime) -> TickResult:
        epoch = self.store.acquire_leadership(self.id, now, self.lease_ttl)
        if epoch is None:
            return TickResult(leader=False)
        result = TickResult(leader=True)
        result.runs_created = self.schedule_dags(now)
        result.runs_started = self.store.start_queued_runs(now)
        result.reaped = self.store.reap_expired(now)
        for _ in range(3):  # skips and failures propagate; a few passes settle them
            released = self.store.release_ready(now)
            result.released += released
            finished = self.store.finish_runs(now)
            result.runs_finished += finished
            if not released and not finished:
                break
            if finished:  # a finished run may free a max_active_runs slot
                result.runs_started += self.store.start_queued_runs(now)
        self.store.finish_backfills(now)
        if result.released and self.on_release is not None:
            self.on_release.set()
        return result

    def schedule_dags(self, now: datetime) -> int:
        created = 0
        for dag in self.store.list_dags():
            if dag.is_paused or dag.schedule_exhausted:
                continue
            try:
                spec = self.store.spec(dag.dag_id, dag.version_hash)
                has_history = (
                    dag.next_logical_date is None
                    and self.store.latest_run_date(dag.dag_id) is not None
                )
                decided = plan(
                    spec.schedule,
                    spec.misfire,
                    dag.next_logical_date,
                    now,
                    grace=spec.misfire_grace,
                    catchup_window=spec.catchup_window,
                    has_history=has_history,
                    batch=self.batch,
                )
                if decided is None:
                    continue
                created += self.store.create_scheduled_runs(
                    dag.dag_id,
                    dag.version_hash,
                    cursor=dag.next_logical_date,
                    new_cursor=decided.new_cursor,
                    fire_times=[(t, spec.schedule.data_interval(t)) for t in decided.fire_times],
                    decisions=decided.decisions,
                    now=now,
                )
            except Exception:  # one bad DAG must not stop the others
                log.exception("scheduling dag_id=%s failed", dag.dag_id)
        return created

    def run_forever(self, stop: threading.Event) -> None:
        log.info("scheduler %s started", self.id)
        while not stop.is_set():
            try:
                result = self.tick(self.clock.now())
            except Exception:
                log.exception("scheduler tick failed; retrying")
                result = TickResult(leader=False)
            if result.busy:
                continue
            self.wake.wait(self.settings.scheduler_interval)
            self.wake.clear()
        self.store.release_leadership(self.id)
        log.info("scheduler %s stopped", self.id)
