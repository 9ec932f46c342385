"""The worker: claims task instances under leases and runs them in child processes.

Children are long-lived (a DAG file is imported once per child, not once per try)
and are killed and replaced when a try times out, crashes them, or loses its lease.
The worker heartbeats all its leases in one statement and records each outcome with
a write fenced on (id, try, owner, state).

>>> worker = Worker(store, clock, settings, concurrency=4)   # doctest: +SKIP
>>> worker.run_until_idle()                                  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from orchestrator.clock import Clock
from orchestrator.engine.logship import LogShipper
from orchestrator.engine.secrets_chain import SecretsChain
from orchestrator.engine.start_environ import hide_start_environment
from orchestrator.engine.task_processes import (
    TaskProcesses,
    TaskSlot,
    mp_context,
    start_forkserver,
)
from orchestrator.engine.task_user import resolve as resolve_task_user
from orchestrator.engine.taskenv import EnvPolicy
from orchestrator.engine.worker_jobs import Dispatching
from orchestrator.engine.worker_leases import LeaseKeeping
from orchestrator.engine.worker_prefetch import Prefetching
from orchestrator.engine.worker_rounds import Rounds
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import bounded_wait_ended
from orchestrator.store.core.identity import DatabaseGoneError
from orchestrator.store.core.records import Claim

log = logging.getLogger(__name__)


class Worker(TaskProcesses, LeaseKeeping, Prefetching, Dispatching, Rounds):
    """One worker: this class owns the loop (``tick``, ``run_forever``, ``drain``); its
    parts are the task processes (``task_processes.py``), the leases
    (``worker_leases.py``), claims made ahead (``worker_prefetch.py``), starting a try
    (``worker_jobs.py``) and recording a round's outcomes (``worker_rounds.py``)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        settings: Settings,
        *,
        worker_id: str | None = None,
        concurrency: int | None = None,
        queues: tuple[str, ...] = ("default",),
        wake: threading.Event | None = None,
        on_finish: threading.Event | None = None,
        secrets: SecretsChain | None = None,
    ) -> None:
        """``secrets``: where tries' variable and connection lookups are answered
        (default: the environment, this store, the configured backend)."""
        self.store = store
        self.clock = clock
        self.settings = settings
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.concurrency = concurrency or settings.worker_concurrency
        self.queues = tuple(queues)
        self.lease = timedelta(seconds=settings.lease_seconds)
        self.wake = wake or threading.Event()
        self.on_finish = on_finish
        # /proc/<this pid>/environ is readable by the tasks (same user): wipe it before
        # the forkserver and the threads start (engine/start_environ.py)
        hide_start_environment()
        self._ctx = mp_context()
        self._env_policy = EnvPolicy.for_settings(settings)
        start_forkserver(self._env_policy)  # and the resource tracker, without secrets
        self._task_user = resolve_task_user(settings.task_user)  # issue 24
        self._idle: list[TaskSlot] = []
        self._busy: list[TaskSlot] = []
        self._last_heartbeat = time.monotonic()
        self._registered = False
        self.draining = False
        # finished tries not yet recorded: (claim, ok, result-or-error, exit, try_state, at)
        self._outbox: list[tuple[Claim, bool, Any, int | None, str, datetime]] = []
        # issue 15: ctx.outlet_event extras of finished tries, by (ti_id, try_number)
        self._outlet_extras: dict[tuple[int, int], dict[str, Any]] = {}
        self._claim_hint = True  # run_forever: a claim may find something
        self._last_claim = 0.0  # monotonic
        self.released = 0  # downstream tasks this worker queued itself when finishing
        self.ready = threading.Event()  # run_forever: children started, worker registered
        self._logs = LogShipper(store, settings.max_log_bytes)  # try logs to the store
        self._last_ship = time.monotonic()
        # what tries' lookups read (issue 16); dags test: the real store, not its own
        self._secrets = secrets or SecretsChain(store, settings)
        self._checks = 0.0  # monotonic: until then, claim due built-in sensors every round
        # claimed ahead of a free task process (worker_prefetch): (claim, monotonic claimed)
        self.prefetch = settings.worker_prefetch
        self._backlog: list[tuple[Claim, float]] = []
        self._backlog_confirmed = 0.0  # monotonic: the last heartbeat that kept them
        self._short = False  # the last try collected was short: claim ahead

    def _register(self, now: datetime) -> None:
        if not self._registered:
            self.store.register_worker(
                self.id, socket.gethostname(), os.getpid(), list(self.queues), now
            )
            self._registered = True

    def tick(
        self,
        now: datetime,
        *,
        wait_seconds: float = 0.0,
        claim: bool = True,
        extra: Any = (),
    ) -> int:
        """Collect finished tries, enforce timeouts, heartbeat, claim and dispatch.

        Returns how many tries finished or started in this tick. ``claim=False`` skips
        the claim transaction (``run_forever`` when it knows nothing new is claimable).
        """
        self._register(now)
        activity = self._collect(now, wait_seconds, extra)
        self._enforce_timeouts(now)
        if time.monotonic() - self._last_heartbeat >= self.settings.heartbeat_seconds:
            try:
                self.heartbeat(now)
            except Exception as exc:  # noqa: BLE001 - the database may be down: fence below
                log.warning("heartbeat failed (%s); will retry", str(exc).splitlines()[0])
        self._self_fence()
        if self._backlog:
            self._start_backlog()  # a process freed by a timeout or a lost lease
            self._give_back()
        if time.monotonic() - self._last_ship >= self.settings.log_ship_seconds:
            self._ship_logs()
        free = self._free_slots()
        if free > 0 and (claim or self._claim_hint):
            if activity:  # time has passed since `now`: stamp the claim with the present
                now = max(now, self.clock.now())
            self._last_claim = time.monotonic()
            claims = self.store.claim(
                self.id, now, self.lease, limit=free, queues=self.queues, results=True
            )
            # a full batch may leave more behind; a short one means nothing else is ready
            self._claim_hint = len(claims) == free
            for c in claims:
                self._dispatch(c, now)
            activity += len(claims)
        return activity

    def run_until_idle(self, timeout: float = 120.0) -> None:
        """Burst mode: work until nothing is running or claimable (for tests and tools)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            activity = self.tick(self.clock.now(), wait_seconds=0.05)
            if not activity and not self._busy and not self._outbox and not self._backlog:
                return
        raise TimeoutError(f"worker still busy after {timeout}s")

    def run_forever(self, stop: threading.Event) -> None:
        log.info(
            "worker %s started: queues=%s concurrency=%s",
            self.id,
            ",".join(self.queues),
            self.concurrency,
        )
        poll = self.settings.worker_poll_seconds
        try:
            self.warm_up()
            self._register(self.clock.now())
        except Exception:  # noqa: BLE001 - the loop retries registering
            log.exception("worker start-up failed; retrying in the loop")
        self.ready.set()
        gone_logged = float("-inf")  # monotonic time a lost database was last reported
        while not stop.is_set():
            try:
                if self.wake.is_set() or _pending(self.wake):  # released: claim at once
                    self.wake.clear()  # (also drains a WakeEvent's pipe: no busy loop)
                    self._claim_hint = True
                if time.monotonic() - self._last_claim >= poll:
                    self._claim_hint = True  # the polling fallback (retries coming due)
                activity = self.tick(self.clock.now(), wait_seconds=0.0, claim=False)
                if activity:
                    continue
                if self._busy:
                    # wait for a child's result, or a wakeup when tasks are released
                    wake_fd = _fileno(self.wake)
                    self.tick(
                        self.clock.now(),
                        wait_seconds=min(0.2, poll),
                        claim=False,
                        extra=[wake_fd] if wake_fd is not None else (),
                    )
                elif not self._claim_hint and not self._outbox:  # (outcomes to record: go on)
                    self.wake.wait(poll)
            except DatabaseGoneError as exc:
                if time.monotonic() - gone_logged >= self.settings.lease_seconds:
                    gone_logged = time.monotonic()
                    log.critical("%s: the worker records nothing more", exc)
                stop.wait(1.0)
            except Exception as exc:
                if bounded_wait_ended(exc):  # a lock held by a frozen process: go on now
                    log.warning("worker round: %s; retrying", str(exc).splitlines()[0])
                    continue
                log.exception("worker tick failed; retrying")
                stop.wait(1.0)
        self.drain()
        self.close()

    def drain(self, timeout: float | None = None) -> None:
        """Stop claiming; let running tries finish for ``drain_seconds``; hand back the rest.

        A handed-back task instance is queued again at once for another worker, and the
        interrupted try does not count against its retries.
        """
        self.draining = True
        timeout = self.settings.drain_seconds if timeout is None else timeout
        self._give_back(every=True)  # not started: queued again at once, nothing spent
        if self._busy:
            log.info(
                "draining: waiting up to %.0fs for %d running task(s)", timeout, len(self._busy)
            )
        end = time.monotonic() + timeout
        while self._busy and time.monotonic() < end:
            try:
                self.tick(self.clock.now(), wait_seconds=0.2)
            except Exception:  # noqa: BLE001
                log.exception("worker tick failed while draining")
                time.sleep(0.5)
        for slot in list(self._busy):
            self._busy.remove(slot)
            slot.kill()
            claim = slot.claim
            if claim is None:
                continue
            try:
                self.store.hand_back(claim, self.clock.now())
            except Exception:  # noqa: BLE001 - its lease will expire and it will be retried
                log.exception("could not hand back task_id=%s", claim.task_id)
        if len(self._logs):
            self._ship_logs()  # what the handed-back tries wrote

    def close(self) -> None:
        """Stop all children. Running tries are abandoned; their leases will expire."""
        for slot in self._idle + self._busy:
            with contextlib.suppress(BrokenPipeError, OSError):
                slot.conn.send(None)
            slot.kill()
        self._idle.clear()
        self._busy.clear()
        if self._backlog:  # claimed ahead, never started: claimable again at once
            self._give_back(every=True)
        if self._registered:
            try:
                self.store.worker_stopped(self.id, self.clock.now())
            except Exception:  # noqa: BLE001
                log.warning("could not mark worker %s stopped", self.id)


def _fileno(event: Any) -> int | None:
    """The wake event's file descriptor (``wakeup.WakeEvent``), if it has one."""
    fileno = getattr(event, "fileno", None)
    return fileno() if fileno is not None else None


def _pending(event: Any) -> bool:
    """True if a WakeEvent's pipe holds a wakeup (its flag may race with the pipe)."""
    fd = _fileno(event)
    return fd is not None and bool(select.select([fd], [], [], 0)[0])
