"""The scheduler: a ``tick(now)`` that moves DAG runs forward, and a thin loop.

Each tick, if this scheduler holds the leader lease, it reaps expired leases,
releases tasks whose trigger rules are met, finishes runs (starting the queued runs
they made room for in the same transaction), creates due runs (misfire policy
applied) and starts queued runs within max_active_runs, queueing their root tasks.
Workers are woken as soon as a step queued tasks.

>>> scheduler = Scheduler(store, clock, settings)      # doctest: +SKIP
>>> scheduler.tick(clock.now())                        # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from orchestrator.clock import Clock
from orchestrator.scheduling.misfire import data_intervals, plan
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import bounded_wait_ended
from orchestrator.store.core.identity import DatabaseGoneError
from orchestrator.store.runs.run_progress import Started

log = logging.getLogger(__name__)


@dataclass
class TickResult:
    leader: bool
    runs_created: int = 0
    runs_started: list[str] = field(default_factory=list)
    released: int = 0
    reaped: list = field(default_factory=list)
    runs_finished: list = field(default_factory=list)
    told: int = 0  # how many of ``released`` the workers were woken for

    @property
    def busy(self) -> bool:
        return bool(
            self.runs_created
            or self.runs_started
            or self.released
            or self.reaped
            or self.runs_finished
        )


class _LeaseAtRisk(Exception):
    pass


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
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.monotonic = monotonic  # paces self-fencing; tests pass a fake
        self.clock = clock
        self.settings = settings
        self.id = scheduler_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.wake = wake or threading.Event()
        self.on_release = on_release
        self.batch = batch
        self.lease_ttl = timedelta(seconds=settings.lease_seconds)
        self._renewed: tuple[float, datetime] | None = None  # (monotonic, clock) of renewal
        self._gone_logged = float("-inf")  # monotonic time the lost database was reported

    def tick(self, now: datetime) -> TickResult:
        problem = self.store.identity_problem()  # a deleted SQLite file: act no more
        if problem is not None:
            self._renewed = None
            raise DatabaseGoneError(f"{problem}; the scheduler stopped writing")
        asked = self._lease(now)
        if asked is None:
            return TickResult(leader=False)
        result = TickResult(leader=True)
        try:
            # finishing first: a worker woke us because a run may be done, and the runs
            # it makes room for start in the same transaction
            self._acting(asked)
            result.reaped = self.store.reap_expired(now)
            self.store.time_out_runs(now)  # dagrun_timeout (issue 14: store/runs/run_timeout.py)
            if self.on_release is not None and any(r[3] == "queued" for r in result.reaped):
                self.on_release.set()  # lost tries are queued again at once: wake workers
            for _ in range(3):  # skips and failures propagate; a few passes settle them
                self._acting(asked)
                released = self.store.release_ready(now)
                result.released += released
                self._tell_workers(result)
                # finishing a run starts the queued runs it made room for, in the same
                # transaction; start_runs below does what that left (a busy DAG row, a
                # cancel)
                advanced = self.store.finish_ready_runs(now)
                result.runs_finished += advanced.finished
                self._started(result, advanced.started)
                if not released:  # finishing runs releases nothing new (their
                    break  # successors' root tasks were queued as they started)
            self._acting(asked)
            result.runs_created = self.schedule_dags(now)
            self._acting(asked)
            result.runs_created += self.store.create_asset_runs(now)  # issue 15: asset events
            self._acting(asked)
            self._started(result, self.store.start_runs(now))
            self.store.finish_backfills(now)
        except _LeaseAtRisk:
            log.warning(
                "scheduler %s: tick outlasted half its lease; stopping to renew it first", self.id
            )
        return result

    def _started(self, result: TickResult, started: Started) -> None:
        result.runs_started += started.run_ids
        result.released += started.tasks_queued  # the started runs' root tasks
        self._tell_workers(result)

    def _tell_workers(self, result: TickResult) -> None:
        """Wake the workers as soon as a step of the tick queued tasks, not at its end."""
        if result.released > result.told and self.on_release is not None:
            self.on_release.set()
        result.told = result.released

    def _lease(self, now: datetime) -> float | None:
        """Hold the leader lease; the monotonic time it was last asked for, or None.

        Renewing is a write transaction, so a scheduler ticking often renews only once
        a quarter of the lease has passed since its last renewal, judged both by the
        monotonic clock and by the injected clock (a test's fake clock jumping past
        the lease makes it renew, and find out it lost the lease). ``_acting`` still
        stops every tick at half the lease after the last renewal, so the lease is
        certainly ours whenever we act.
        """
        quarter = self.lease_ttl / 4
        last = self._renewed
        if (
            last is not None
            and self.monotonic() - last[0] < quarter.total_seconds()
            and timedelta(0) <= now - last[1] < quarter
        ):
            return last[0]
        asked = self.monotonic()  # the lease runs from no earlier than this
        epoch = self.store.acquire_leadership(self.id, now, self.lease_ttl)
        if epoch is None:
            self._renewed = None
            return None
        self._renewed = (asked, now)
        return asked

    def _acting(self, asked: float) -> None:
        """Self-fencing: act only while the lease is certainly still ours.

        The lease was renewed no earlier than ``asked``; past half its length, stop
        and renew before doing more, so a slow or cut-off leader never acts on an
        expired lease. (Its late writes would be harmless anyway: every creation and
        state change is a compare-and-set.)
        """
        if self.monotonic() - asked > self.lease_ttl.total_seconds() / 2:
            raise _LeaseAtRisk

    def schedule_dags(self, now: datetime) -> int:
        created = 0
        for dag in self.store.list_dags(schedulable=True):
            try:
                spec = self.store.spec(dag.dag_id, dag.version_hash)
                if spec.schedule.kind == "none":
                    continue  # manual only: nothing to create, no history to look up
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
                    fire_times=data_intervals(spec.schedule, decided.fire_times),
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
            except DatabaseGoneError as exc:  # loud, once a lease length, never a tight loop
                if time.monotonic() - self._gone_logged >= self.settings.lease_seconds:
                    self._gone_logged = time.monotonic()
                    log.critical("%s (restore the file and restart)", exc)
                result = TickResult(leader=False)
            except Exception as exc:
                if bounded_wait_ended(exc):  # a lock held by a frozen process: go on
                    log.warning("scheduler tick: %s; retrying", str(exc).splitlines()[0])
                else:
                    log.exception("scheduler tick failed; retrying")
                result = TickResult(leader=False)
            if result.busy:
                continue
            self.wake.wait(self.settings.scheduler_interval)
            self.wake.clear()
        try:
            self.store.release_leadership(self.id)
        except Exception:  # noqa: BLE001 - it will expire by itself
            log.warning("could not give up the leader lease; it expires by itself")
        log.info("scheduler %s stopped", self.id)
