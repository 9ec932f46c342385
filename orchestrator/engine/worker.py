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
import multiprocessing
import os
import select
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from multiprocessing.connection import Connection, wait
from typing import Any

from orchestrator.clock import Clock
from orchestrator.engine.logship import LogShipper
from orchestrator.engine.mapped_job import mapped_job
from orchestrator.engine.proctree import kill_tree
from orchestrator.engine.runner import task_child
from orchestrator.engine.secrets_chain import SecretsChain, answer_lookup
from orchestrator.engine.sensor_checks import (
    RESCHEDULE,
    SENSOR_OUTCOMES,
    evaluate,
    record_sensor_outcome,
)
from orchestrator.engine.start_environ import hide_start_environment
from orchestrator.engine.task_hooks import try_state_of
from orchestrator.engine.taskenv import EnvPolicy
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import bounded_wait_ended
from orchestrator.store.core.identity import DatabaseGoneError
from orchestrator.store.core.records import Claim
from orchestrator.store.tasks.task_store import idempotency_key

log = logging.getLogger(__name__)
# a round waits up to GATHER_SECONDS for tries started in the last GATHER_RECENT seconds
GATHER_SECONDS = 0.002
GATHER_RECENT = 0.05
_NOTHING = object()  # no message: the channel is closed (the task process died)
CHECKS_SECONDS = 600.0  # rounds keep claiming built-in sensors this long after the last
# worker_prefetch: claim ahead only while tries are this short, and give a claim back
# (store.unclaim) that has not started this long after it was claimed
PREFETCH_SHORT_SECONDS = 0.25
BACKLOG_SECONDS = 1.0


def mp_context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        [
            "orchestrator.engine.forkserver_init",  # first: no task inherits its environ
            "orchestrator.engine.runner",
            "orchestrator.authoring.dag",
            "orchestrator.authoring.context",
        ]
    )
    return ctx


@dataclass
class _Slot:
    process: Any
    conn: Connection
    claim: Claim | None = None
    deadline: float | None = None  # monotonic
    timeout: float | None = None  # seconds, for the message
    confirmed: float = 0.0  # monotonic time the lease was last confirmed (claim, heartbeat)
    started: float = 0.0  # monotonic time the current try was handed to the child

    def kill(self) -> None:
        """Kill the task child, its process group and every process it started."""
        pid = self.process.pid
        if pid and self.process.exitcode is None:
            kill_tree(pid)
        elif pid:  # dead already: what is left of its process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        self.process.join(5)
        self.conn.close()


class Worker:
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
    ) -> None:
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
        self._idle: list[_Slot] = []
        self._busy: list[_Slot] = []
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
        self._secrets = SecretsChain(store, settings)  # what tries' lookups read (issue 16)
        self._checks = 0.0  # monotonic: until then, claim due built-in sensors every round
        # claimed ahead of a free task process (worker_prefetch): (claim, monotonic claimed)
        self.prefetch = settings.worker_prefetch
        self._backlog: list[tuple[Claim, float]] = []
        self._backlog_confirmed = 0.0  # monotonic: the last heartbeat that kept them
        self._short = False  # the last try collected was short: claim ahead

    # -- children --------------------------------------------------------------------------
    def _spawn(self) -> _Slot:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=task_child, args=(child, self._env_policy), daemon=True, name="task-runner"
        )
        process.start()
        child.close()
        return _Slot(process, parent)

    def _free_slot(self) -> _Slot:
        while self._idle:
            slot = self._idle.pop()
            if slot.process.is_alive() and not slot.conn.poll():
                return slot
            # dead, or something spoke on the channel of an idle child: not to be trusted
            slot.kill()
        return self._spawn()

    def _register(self, now: datetime) -> None:
        if not self._registered:
            self.store.register_worker(
                self.id, socket.gethostname(), os.getpid(), list(self.queues), now
            )
            self._registered = True

    def warm_up(self) -> None:
        """Start the task children now, so the first tries do not wait for them
        (``run_forever`` calls this before it registers and claims)."""
        while len(self._idle) + len(self._busy) < self.concurrency:
            self._idle.append(self._spawn())

    @property
    def running(self) -> int:
        return len(self._busy)

    # -- the loop --------------------------------------------------------------------------
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

    def heartbeat(self, now: datetime) -> None:
        held = {(s.claim.ti_id, s.claim.try_number) for s in self._busy if s.claim}
        held |= {(c.ti_id, c.try_number) for c, _ in self._backlog}
        self._last_heartbeat = time.monotonic()
        started = time.monotonic()
        kept = self.store.heartbeat(self.id, held, now, self.lease)
        if not held:
            return
        for slot in self._busy:
            if slot.claim and (slot.claim.ti_id, slot.claim.try_number) in kept:
                slot.confirmed = started
        # a prefetched claim whose lease was lost is not started
        self._backlog = [(c, t) for c, t in self._backlog if (c.ti_id, c.try_number) in kept]
        self._backlog_confirmed = started
        for slot in list(self._busy):
            if slot.claim and (slot.claim.ti_id, slot.claim.try_number) not in kept:
                log.error(
                    "lease lost for dag_id=%s run_id=%s task_id=%s try=%s: stopping it",
                    slot.claim.dag_id,
                    slot.claim.run_id,
                    slot.claim.task_id,
                    slot.claim.try_number,
                )
                self._busy.remove(slot)
                slot.kill()

    def _fence_margin(self) -> float:
        """Seconds a lease is trusted unconfirmed: a fifth of it is kept in hand."""
        return self.settings.lease_seconds * 0.8

    def _self_fence(self) -> None:
        """Stop tries whose lease could not be confirmed in time, before it can expire.

        If heartbeats fail (database unreachable, network cut), the scheduler will soon
        reap these leases and another worker will run the tasks: this worker must not
        still be running them then. The margin is a fifth of the lease.
        """
        limit = self._fence_margin()
        mono = time.monotonic()
        for slot in list(self._busy):
            if slot.claim is not None and mono - slot.confirmed > limit:
                log.error(
                    "cannot confirm the lease of dag_id=%s run_id=%s task_id=%s try=%s for "
                    "%.0fs: stopping it before the lease expires",
                    slot.claim.dag_id,
                    slot.claim.run_id,
                    slot.claim.task_id,
                    slot.claim.try_number,
                    mono - slot.confirmed,
                )
                self._busy.remove(slot)
                slot.kill()

    def _dispatch(self, claim: Claim, now: datetime) -> None:
        try:
            spec = self.store.spec(claim.dag_id, claim.version_hash)
            task = spec.tasks[claim.task_id]
            # issue 15: the events that started an asset-triggered run (ctx)
            triggering = (
                self.store.triggering_asset_events(claim.run_id)
                if "__asset_triggered__" in claim.run_id
                else []
            )
        except Exception as exc:  # noqa: BLE001
            self.store.finish_failure(claim, f"cannot prepare the try: {exc}", None, now)
            return
        if task.check is not None:  # a built-in sensor: the worker checks (issue 15)
            self._check(claim, spec, task, now)
            return
        if len(self._busy) >= self.concurrency:  # claimed ahead (worker_prefetch)
            self._backlog.append((claim, time.monotonic()))
            return
        params = dict(spec.params)
        params.update(claim.conf)
        mapped = mapped_job(spec, task, claim)  # engine/mapped_job.py (issue 14)
        job = mapped | {
            "dag_id": claim.dag_id,
            "run_id": claim.run_id,
            "task_id": claim.task_id,
            "try_number": claim.try_number,
            "logical_date": claim.logical_date.isoformat(),
            "data_interval_start": claim.data_interval_start.isoformat(),
            "data_interval_end": claim.data_interval_end.isoformat(),
            "params": params,
            "idempotency_key": idempotency_key(
                claim.dag_id, claim.run_id, claim.task_id, claim.map_index
            ),
            "upstream": list(task.upstream),
            "results": mapped["results"],
            "kind": task.kind,
            "command": task.command,
            "http": task.http,
            "env": task.env,
            "timezone": spec.timezone,
            "fileloc": spec.fileloc,
            "cwd": os.path.dirname(spec.fileloc),
            "log_file": os.path.join(self.settings.log_dir, claim.log_path),
            "max_result_bytes": self.settings.max_result_bytes,
            "max_log_bytes": self.settings.max_log_bytes,
            "venv_cache_dir": self.settings.venv_cache_dir,  # @task.virtualenv (issue 16)
            "venv_installer": self.settings.venv_installer,
            "tag": (claim.ti_id, claim.try_number),
            # issue 15: the task's outlets, and the events that triggered an asset run
            "outlets": list(task.outlets),
            "triggering_asset_events": triggering,
            # issue 14: hooks run in the task process; a shell exit status that skips
            "hooks": [h for h in task.callbacks if h in ("on_execute", "on_success")],
            "skip_on_exit_code": task.skip_on_exit_code,
            "sensor": task.sensor,
            "poke_count": claim.poke_count,
        }
        slot = self._free_slot()
        slot.claim = claim
        slot.confirmed = slot.started = time.monotonic()
        timeout = task.timeout.total_seconds() if task.timeout else None
        slot.deadline = time.monotonic() + timeout if timeout else None
        slot.timeout = timeout
        try:
            slot.conn.send(job)
        except (BrokenPipeError, OSError):
            slot.kill()
            slot = self._spawn()
            slot.claim = claim
            slot.confirmed = slot.started = time.monotonic()
            slot.deadline = time.monotonic() + timeout if timeout else None
            slot.timeout = timeout
            slot.conn.send(job)
        self._busy.append(slot)
        self._logs.start(claim.ti_id, claim.try_number, job["log_file"])
        log.info(
            "started dag_id=%s run_id=%s task_id=%s try=%s",
            claim.dag_id,
            claim.run_id,
            claim.task_id,
            claim.try_number,
        )

    def _check(self, claim: Claim, spec: Any, task: Any, now: datetime) -> None:
        """Evaluate a built-in sensor's check here (engine/sensor_checks.py): no slot."""
        log_file = os.path.join(self.settings.log_dir, claim.log_path)
        out = evaluate(self.store, claim, spec, task, now, log_file=log_file,
                       max_log_bytes=self.settings.max_log_bytes)  # fmt: skip
        ok = out.state == "success"
        # for a while, every round claims due built-in sensors too (store.finish_round)
        self._checks = time.monotonic() + CHECKS_SECONDS
        self._outbox.append((claim, ok, out.payload, 0 if ok else None, out.state, now))

    def _collect(self, now: datetime, wait_seconds: float, extra: Any = ()) -> int:
        if not self._busy:
            return 0
        ready = wait(
            [s.conn for s in self._busy] + [s.process.sentinel for s in self._busy] + list(extra),
            wait_seconds,
        )
        if not ready:
            return 0
        if wait_seconds:
            ready += self._gather(ready)
        done = 0
        now = self.clock.now() if wait_seconds else now
        for slot in list(self._busy):
            if slot.conn not in ready and slot.process.sentinel not in ready:
                continue
            claim = slot.claim
            assert claim is not None
            outcome: dict[str, Any] | None = None
            message: Any = _NOTHING
            try:
                if slot.conn.poll():
                    message = slot.conn.recv()
            except (EOFError, OSError):
                message = _NOTHING
            except Exception as exc:  # noqa: BLE001 - garbage on the channel
                message = exc
            if answer_lookup(self._secrets, slot.conn, message, (claim.ti_id, claim.try_number)):
                continue  # the try asked for a variable or connection: it runs on
            self._busy.remove(slot)
            if message is not _NOTHING:
                outcome = _outcome_of(message, (claim.ti_id, claim.try_number), slot.process.pid)
                if outcome is None:
                    slot.kill()
                    error = _protocol_error(message, slot.process.pid)
                    log.error(
                        "dag_id=%s run_id=%s task_id=%s try=%s: %s",
                        claim.dag_id,
                        claim.run_id,
                        claim.task_id,
                        claim.try_number,
                        error,
                    )
                    self._outbox.append((claim, False, error, None, "crashed", now))
                    done += 1
                    continue
            if outcome is None:
                slot.process.join(1)
                code = slot.process.exitcode
                slot.kill()
                reason = _describe_exit(code)
                self._outbox.append(
                    (claim, False, f"the task process died: {reason}", code, "crashed", now)
                )
            else:
                # tries this short: claim ahead of the free processes (worker_prefetch)
                self._short = time.monotonic() - slot.started < PREFETCH_SHORT_SECONDS
                slot.claim, slot.deadline = None, None
                self._idle.append(slot)
                if outcome["ok"]:
                    if outcome.get("outlet_events"):  # issue 15
                        self._outlet_extras[(claim.ti_id, claim.try_number)] = outcome[
                            "outlet_events"
                        ]
                    self._outbox.append((claim, True, outcome.get("result"), 0, "success", now))
                elif outcome.get("sensor"):  # a sensor not met yet, or timed out (issue 15)
                    if outcome["sensor"] == "reschedule":  # payload: no earlier next poke
                        self._outbox.append((claim, False, None, None, "reschedule", now))
                    else:
                        error = outcome.get("error")
                        self._outbox.append((claim, False, error, None, "sensor_failed", now))
                else:
                    error, status = outcome["error"], outcome.get("exit_status")
                    # "failed", or a Skip / Fail the task chose (engine/task_hooks.py)
                    self._outbox.append((claim, False, error, status, try_state_of(outcome), now))
            done += 1
        self._start_backlog()  # the freed processes go on while this round is recorded
        self._flush()
        return done

    def _start_backlog(self) -> None:
        """Hand claims made ahead (``worker_prefetch``) to the free task processes; one
        whose lease could not be confirmed in time (``_self_fence``'s margin) is not
        started: the lease may have expired and another worker may run it."""
        limit = self._fence_margin()
        while self._backlog and len(self._busy) < self.concurrency and not self.draining:
            claim, claimed = self._backlog.pop(0)
            if time.monotonic() - max(claimed, self._backlog_confirmed) > limit:
                log.error(
                    "cannot confirm the lease of dag_id=%s run_id=%s task_id=%s try=%s "
                    "claimed ahead: not starting it",
                    claim.dag_id, claim.run_id, claim.task_id, claim.try_number,
                )  # fmt: skip
                continue
            self._dispatch(claim, self.clock.now())

    def _give_back(self, every: bool = False) -> None:
        """Give back (``store.unclaim``) the claims made ahead that have waited over
        ``BACKLOG_SECONDS`` while every process runs a try that turned out long, or
        ``every`` one (draining). A wait for any other reason (this worker's own round
        stuck on a lock) is not given back: the next free process starts it. If the
        database cannot take it, they are dropped once their lease can no longer be
        trusted: the lease expires and the scheduler requeues them."""
        mono = time.monotonic()
        if not every and (
            len(self._busy) < self.concurrency
            or any(mono - s.started < PREFETCH_SHORT_SECONDS for s in self._busy)
        ):
            return  # a process is free, or frees soon
        old = [(c, t) for c, t in self._backlog if every or mono - t > BACKLOG_SECONDS]
        if not old:
            return
        try:
            self.store.unclaim([c for c, _ in old], self.clock.now())
        except Exception as exc:  # noqa: BLE001 - the database may be down: retry later
            log.warning("cannot give back %d claim(s) yet (%s)", len(old), str(exc)[:200])
            limit = self._fence_margin()
            old = [(c, t) for c, t in old if mono - t > limit]
        gone = {id(c) for c, _ in old}
        self._backlog = [(c, t) for c, t in self._backlog if id(c) not in gone]
        if old:
            self._claim_hint = True  # claimable again: by this worker too, once it is free
            self._short = False  # the tries turned out long: claim no more ahead for now

    def _gather(self, ready: list[Any]) -> list[Any]:
        """Once one child has finished, give the others started with it a moment
        (``GATHER_SECONDS``) to finish too, so a burst of short tries is recorded in one
        round (one transaction) instead of in a round each. Only tries started in the
        last ``GATHER_RECENT`` seconds are waited for: a long task never delays a round,
        and a lone try (a chain) is not waited for at all."""
        mono = time.monotonic()
        waiting = [
            s.conn
            for s in self._busy
            if s.conn not in ready
            and s.process.sentinel not in ready
            and mono - s.started < GATHER_RECENT
        ]
        gathered: list[Any] = []
        end = mono + GATHER_SECONDS
        while waiting:
            got = wait(waiting, max(0.0, end - time.monotonic()))
            if not got:
                break
            gathered += got
            waiting = [c for c in waiting if c not in got]
        return gathered

    def _flush(self) -> int:
        """Record finished tries, oldest first. If the database is unreachable, keep them
        and try again next tick: an outcome is never dropped because of an outage.

        Consecutive successes are recorded in one transaction, which also queues the
        downstream tasks they unblock (``store.finish_successes``) and, for the last
        batch when slots are free, claims what is ready in the same transaction
        (``store.finish_and_claim``): one commit per round. The scheduler is woken only
        when something is left that it alone decides (a failure, another trigger rule,
        a finished run), so it does not tick once per task.
        """
        pieces: list | None = None  # the ends of ended tries' logs, for the first commit
        if self._logs.ended(live := self._live()):
            if self._outbox and self._outbox[0][1]:  # a success first: its commit carries them
                pieces = self._logs.prepare(live, ended_only=True)
            else:
                self._logs.ship(self.clock.now(), live, ended_only=True)
        recorded = 0
        wake_scheduler = False
        claimed: tuple[list[Claim], datetime] | None = None  # and when they were claimed
        while self._outbox:
            claim, ok, payload, exit_status, try_state, at = self._outbox[0]
            try:
                if ok or try_state == RESCHEDULE:
                    # the leading successes and (issue 15) unmet pokes, in one commit
                    batch, pokes, n = [], [], 0
                    for item in self._outbox:
                        if not (item[1] or item[4] == RESCHEDULE):
                            break
                        if len(batch) >= 64 if item[1] else len(pokes) >= 128:
                            break
                        if item[1]:
                            batch.append((item[0], item[2], item[5]))
                        else:
                            pokes.append((item[0], item[5], item[2]))
                        n += 1
                    free = self._free_slots()
                    take = None
                    if n == len(self._outbox) and free > 0:
                        take = (self.id, self.clock.now(), self.lease, free, list(self.queues))
                    extras = self._outlet_extras or None  # issue 15: outlet events' extras
                    if pokes or (take is not None and self._checks > time.monotonic()):
                        # also claims due built-in sensors beyond the free slots
                        states, done, claims = self.store.finish_round(
                            pokes, batch, take, log_pieces=pieces or (), extras=extras
                        )
                        # a poke leaves nothing to the scheduler; a timed-out sensor does
                        wake_scheduler = wake_scheduler or any(
                            st != "up_for_reschedule" for st in states
                        )
                    elif take is not None:
                        done, claims = self.store.finish_and_claim(
                            batch, self.id, take[1], self.lease, limit=free,
                            queues=self.queues, log_pieces=pieces or (), extras=extras,
                        )  # fmt: skip
                    else:
                        done = self.store.finish_successes(batch, extras, log_pieces=pieces or ())
                    if pieces is not None:
                        self._logs.committed()
                        pieces = None
                    if take is not None:
                        claimed = (claims, take[1])
                        self._last_claim = time.monotonic()
                        # a full batch may leave more behind; a short one: nothing else
                        # (built-in sensors' pokes come on top of the free slots)
                        self._claim_hint = len(claims) >= free
                    wake_scheduler = wake_scheduler or any(
                        f.needs_scheduler or not f.recorded for f in done
                    )
                    self.released += sum(f.released for f in done)
                    for c, _, _ in batch:
                        self._outlet_extras.pop((c.ti_id, c.try_number), None)
                    del self._outbox[:n]
                    recorded += n
                    continue
                if try_state in SENSOR_OUTCOMES:  # a sensor that gave up
                    record_sensor_outcome(self.store, claim, try_state, payload, at)
                else:
                    self.store.finish_failure(claim, payload, exit_status, at, try_state=try_state)
            except Exception as exc:  # noqa: BLE001 - database down: retry next tick
                log.warning(
                    "cannot record %d finished tr%s yet (%s); will retry",
                    len(self._outbox),
                    "y" if len(self._outbox) == 1 else "ies",
                    str(exc).splitlines()[0],
                )
                break
            wake_scheduler = True
            self._outbox.pop(0)
            recorded += 1
        if recorded:
            if claimed is None:  # retries and released downstream tasks may be claimable
                self._claim_hint = True
            if wake_scheduler and self.on_finish is not None:
                self.on_finish.set()
        if claimed is not None:
            for c in claimed[0]:
                self._dispatch(c, claimed[1])
        return recorded

    def _live(self) -> set[tuple[int, int]]:
        return {(s.claim.ti_id, s.claim.try_number) for s in self._busy if s.claim}

    def _ship_logs(self) -> None:
        """Ship what the running tries' logs gained since the last time (``logship.py``)."""
        self._last_ship = time.monotonic()
        self._logs.ship(self.clock.now(), self._live())

    def _free_slots(self) -> int:
        """How many task instances a claim may take now: the free task processes and,
        while tries are short, ``worker_prefetch`` more (less what is claimed ahead)."""
        if self.draining:
            return 0
        ahead = self.prefetch if self._short else 0
        return max(0, self.concurrency + ahead - len(self._busy) - len(self._backlog))

    def _enforce_timeouts(self, now: datetime) -> None:
        mono = time.monotonic()
        for slot in list(self._busy):
            if slot.deadline is not None and mono > slot.deadline and slot.claim is not None:
                claim = slot.claim
                self._busy.remove(slot)
                slot.kill()
                limit = timedelta(seconds=round(slot.timeout or 0, 3))
                message = f"timed out after {limit} and was killed"
                self._outbox.append((claim, False, message, None, "timeout", now))
        self._flush()

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


def _outcome_of(message: Any, tag: tuple[int, int], pid: int | None) -> dict[str, Any] | None:
    """The outcome in a task child's reply, if it is the reply of that child (``pid``)
    for this try (``tag``); None for anything else (the protocol is broken)."""
    if (
        type(message) is tuple
        and len(message) == 3
        and message[0] == tag
        and message[1] == pid
        and type(message[2]) is dict
        and "ok" in message[2]
    ):
        return message[2]
    return None


def _protocol_error(message: Any, pid: int | None) -> str:
    if isinstance(message, Exception):
        what = f"an unreadable message ({type(message).__name__}: {message})"
    elif type(message) is tuple and len(message) == 3 and message[1] != pid:
        what = f"a message from pid {message[1]!r}, not from the task process (pid {pid})"
    elif type(message) is tuple and len(message) == 3:
        what = f"a reply for another try ({message[0]!r})"
    else:
        what = f"a malformed message ({type(message).__name__})"
    return (
        f"the task process channel carried {what}: a process the task started (a fork?) "
        "wrote to it, so no outcome of this try can be trusted; the task process was "
        "killed and replaced"
    )


def _fileno(event: Any) -> int | None:
    """The wake event's file descriptor (``wakeup.WakeEvent``), if it has one."""
    fileno = getattr(event, "fileno", None)
    return fileno() if fileno is not None else None


def _pending(event: Any) -> bool:
    """True if a WakeEvent's pipe holds a wakeup (its flag may race with the pipe)."""
    fd = _fileno(event)
    return fd is not None and bool(select.select([fd], [], [], 0)[0])


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"
