"""The scheduler: a ``tick(now)`` that moves DAG runs forward, and a thin loop.

Each tick, if this scheduler holds the leader lease, it reaps expired leases,
releases tasks whose trigger rules are met, finishes runs (starting the queued runs
they made room for in the same transaction), creates due runs (misfire policy
applied) and starts queued runs within max_active_runs, queueing their root tasks.
Workers are woken as soon as a step queued tasks.

Issue 29: a tick's work is bounded. Run creation reads only the DAGs that are due
(``store.create_due_runs``, a batch per transaction) and takes at most
``create_per_tick`` DAGs; starting queued runs takes at most ``start_per_tick`` DAGs; what
is left carries to the next tick, which begins with the release again, so a backlog in
one phase never holds up the others. Between steps the leader renews its lease once a
quarter of it has passed (and stops if it was lost), so a long tick never loses it, and
a stop request ends the tick at the next step. A scheduler without the lease still
creates due runs on PostgreSQL, where ``FOR UPDATE SKIP LOCKED`` hands each scheduler
different DAGs: creation is shared, everything else is the leader's.

>>> scheduler = Scheduler(store, clock, settings)      # doctest: +SKIP
>>> scheduler.tick(clock.now())                        # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from orchestrator.authoring.spec import DagSpec
from orchestrator.clock import Clock
from orchestrator.scheduling.misfire import Plan, plan
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import bounded_wait_ended
from orchestrator.store.core.identity import DatabaseGoneError
from orchestrator.store.runs.due_runs import Decide
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
    more: bool = False  # a bounded phase left work for the next tick

    @property
    def busy(self) -> bool:
        return bool(
            self.runs_created
            or self.runs_started
            or self.released
            or self.reaped
            or self.runs_finished
            or self.more
        )


class _LeaseAtRisk(Exception):
    pass


class _Stopping(Exception):
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
        create_batch: int = 200,
        create_per_tick: int = 1000,
        start_per_tick: int = 500,
    ) -> None:
        self.store = store
        self.monotonic = monotonic  # paces self-fencing; tests pass a fake
        self.clock = clock
        self.settings = settings
        self.id = scheduler_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.wake = wake or threading.Event()
        self.on_release = on_release
        self.batch = batch  # fire times one DAG's plan may create at once (catch-up)
        self.create_batch = create_batch  # due DAGs per creation transaction
        self.create_per_tick = create_per_tick  # due DAGs one tick takes, at most
        self.start_per_tick = start_per_tick  # DAGs whose queued runs one tick starts
        self.stopping = threading.Event()  # set: end the tick at its next step
        self.shares_creation = store.is_postgres  # creation without the lease (SKIP LOCKED)
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
            result = TickResult(leader=False)
            if self.shares_creation:
                with contextlib.suppress(_Stopping):
                    self._create(result, now, leader=False)
            return result
        result = TickResult(leader=True)
        try:
            # finishing first: a worker woke us because a run may be done, and the runs
            # it makes room for start in the same transaction
            self._acting()
            result.reaped = self.store.reap_expired(now)
            self.store.time_out_runs(now)  # dagrun_timeout (issue 14: store/runs/run_timeout.py)
            if self.on_release is not None and any(r[3] == "queued" for r in result.reaped):
                self.on_release.set()  # lost tries are queued again at once: wake workers
            for _ in range(3):  # skips and failures propagate; a few passes settle them
                self._acting()
                released = self.store.release_ready(now, between=self._acting)
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
            self._create(result, now, leader=True)
            self._acting()
            result.runs_created += self.store.create_asset_runs(now)  # issue 15: asset events
            self._acting()
            started = self.store.start_runs(now, limit=self.start_per_tick, between=self._acting)
            result.more = result.more or started.more
            self._started(result, started)
            self.store.finish_backfills(now)
        except _LeaseAtRisk:
            log.warning("scheduler %s: lost the leader lease during a tick; stopping", self.id)
        except _Stopping:
            pass
        return result

    def _create(self, result: TickResult, now: datetime, *, leader: bool) -> None:
        """Create the due DAGs' runs, a batch per transaction, at most
        ``create_per_tick`` DAGs; a full last batch means more may be due."""
        taken = 0
        while taken < self.create_per_tick:
            if leader:
                self._acting()
            elif self.stopping.is_set():
                raise _Stopping
            limit = min(self.create_batch, self.create_per_tick - taken)
            batch = self.store.create_due_runs(now, self._decider(now), limit=limit)
            taken += batch.looked_at
            result.runs_created += batch.created
            if batch.started.run_ids:
                self._started(result, batch.started)
            if not batch.more:
                return
        result.more = True

    def _decider(self, now: datetime) -> Decide:
        def decide(
            spec: DagSpec, cursor: datetime | None, has_history: bool, most: int
        ) -> Plan | None:
            return plan(
                spec.schedule,
                spec.misfire,
                cursor,
                now,
                grace=spec.misfire_grace,
                catchup_window=spec.catchup_window,
                has_history=has_history,
                batch=min(self.batch, most),
            )

        return decide

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
        the lease makes it renew, and find out it lost the lease). ``_acting`` renews
        again between the steps of a long tick, so the lease is certainly ours whenever
        we act.
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

    def _acting(self) -> None:
        """Self-fencing between the steps of a tick: act only while the lease is ours.

        Once a quarter of the lease has passed since it was last renewed, renew it
        before the next step (a write), by the injected clock's time; if another
        scheduler took it meanwhile, stop. Each step is bounded (a batch of DAGs, a
        chunk of runs), so the lease never runs out inside one, and the tick goes on
        for as long as its work takes. A stop request ends the tick here too.
        """
        if self.stopping.is_set():
            raise _Stopping
        last = self._renewed
        if last is None:
            raise _LeaseAtRisk
        if self.monotonic() - last[0] <= self.lease_ttl.total_seconds() / 4:
            return
        asked, now = self.monotonic(), self.clock.now()
        if self.store.acquire_leadership(self.id, now, self.lease_ttl) is None:
            self._renewed = None
            raise _LeaseAtRisk
        self._renewed = (asked, now)

    def _pause(self, result: TickResult) -> float:
        """How long to sleep after an idle tick: ``scheduler_interval``, or less when a
        DAG this scheduler creates runs for falls due sooner, so a minute's runs are made
        at the minute and not up to an interval later (issue 29)."""
        pause = self.settings.scheduler_interval
        if not (result.leader or self.shares_creation):
            return pause
        try:
            due = self.store.next_due_at()
        except Exception:  # noqa: BLE001 - the next tick reports a database problem
            return pause
        if due is None:
            return pause
        return max(0.01, min(pause, (due - self.clock.now()).total_seconds()))

    def schedule_dags(self, now: datetime) -> int:
        """Create the runs of every DAG due at ``now`` (all batches, without the lease:
        each batch is a compare-and-set under its rows' locks); how many were made."""
        created = 0
        while True:
            batch = self.store.create_due_runs(now, self._decider(now), limit=self.create_batch)
            created += batch.created
            if not batch.more:
                return created

    def run_forever(self, stop: threading.Event) -> None:
        log.info("scheduler %s started", self.id)
        self.stopping = stop  # a stop request ends a tick at its next step
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
            self.wake.wait(self._pause(result))
            self.wake.clear()
        try:
            self.store.release_leadership(self.id)
        except Exception:  # noqa: BLE001 - it will expire by itself
            log.warning("could not give up the leader lease; it expires by itself")
        log.info("scheduler %s stopped", self.id)
