"""The triggerer: runs deferred tasks' triggers (and asset watchers) on one asyncio
loop, under leases on the metadata database (issue 30).

``tick(now)`` does one round: extend the leases it holds (dropping triggers it lost),
take free triggers up to its capacity and start them, record the events and errors its
loop produced (``store.fire_triggers``: the tasks queued to resume, same try;
``store.fail_trigger``), fail deferrals past their timeout, and move the other
triggers off a loop a trigger has blocked. ``run_forever`` is the thin loop around it.
Several triggerers share the work: each takes only free or expired triggers, and an
event's write is a compare-and-set, so an event resumes its task once whoever ran it.

>>> t = Triggerer(store, clock, settings)      # doctest: +SKIP
>>> t.tick(clock.now())                        # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from orchestrator.authoring.triggers import (
    TriggerImportError,
    dump_kwargs,
    import_trigger_class,
    load_kwargs,
)
from orchestrator.clock import Clock
from orchestrator.engine.trigger_loop import TriggerLoop
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import bounded_wait_ended
from orchestrator.store.triggers.trigger_store import TriggerRow

log = logging.getLogger(__name__)
FIRE_BATCH = 500  # events recorded in one transaction
POLL_SECONDS = 0.5  # how often free triggers are looked for


class TriggerReads:
    """What built-in triggers read from the store (``trigger.reads``), synchronous:
    they call it through ``asyncio.to_thread``."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def dag_run_state(self, dag_id: str, logical_date: datetime) -> str | None:
        found = self._store.external_state(dag_id, logical_date, None)
        return found[1] if found else None

    def asset_events_after(self, uri: str, since: datetime) -> list[dict[str, Any]]:
        """The asset's events after ``since``, oldest first (of its newest 50)."""
        try:
            events = self._store.asset_events(uri, limit=50)
        except Exception:  # noqa: BLE001 - an unknown asset: no events yet
            return []
        return [
            {"id": e.id, "uri": uri, "at": e.at.isoformat(), "extra": e.extra}
            for e in sorted(events, key=lambda e: e.id)
            if e.at > since
        ]


class Triggerer:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        settings: Settings,
        *,
        capacity: int | None = None,
        on_fire: Any = None,
        on_finish: Any = None,
        triggerer_id: str | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.settings = settings
        self.capacity = capacity or settings.triggerer_capacity
        self.on_fire = on_fire  # tasks were queued to resume: wake the workers (.set())
        self.on_finish = on_finish  # a try failed: wake the scheduler (.set())
        host = socket.gethostname()
        self.id = triggerer_id or f"{host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.hostname = host
        self.lease = timedelta(seconds=settings.lease_seconds)
        self.block_seconds = settings.triggerer_block_seconds
        self.outcomes: queue.Queue = queue.Queue()
        self.reads = TriggerReads(store)
        self.loop = self._new_loop()
        self.loops = [self.loop]
        self.where: dict[int, TriggerLoop] = {}  # trigger id -> the loop running it
        self.rows: dict[int, TriggerRow] = {}
        self.fired = 0
        self.failed = 0
        self._pending: list[tuple] = []
        self._last_renew = 0.0
        self._last_claim = 0.0
        self._generation = 0
        self._registered = False
        from orchestrator.engine.watcher_runtime import WatcherManager

        self.watchers: Any = WatcherManager(self)  # issue 30: asset watchers

    # -- lifecycle ------------------------------------------------------------------
    def start(self, now: datetime) -> None:
        self.store.register_triggerer(self.id, self.hostname, os.getpid(), self.capacity, now)
        self._registered = True
        log.info("triggerer %s started (capacity %d)", self.id, self.capacity)

    def close(self, now: datetime) -> None:
        """Stop the loops and give the triggers back at once (not after a lease)."""
        if self.watchers is not None:
            self.watchers.close()
        for loop in self.loops:
            loop.stop()
        try:
            self.store.release_triggers(self.id)
            if self._registered:
                self.store.stop_triggerer(self.id, now)
        except Exception as exc:  # noqa: BLE001 - the leases expire anyway
            log.warning("could not give the triggers back: %s", str(exc).splitlines()[0])

    def run_forever(self, stop: threading.Event) -> None:
        self.start(self.clock.now())
        try:
            while not stop.is_set():
                try:
                    self.tick(self.clock.now())
                except Exception as exc:  # noqa: BLE001 - the database: retry
                    if bounded_wait_ended(exc):
                        log.warning("triggerer tick: %s; retrying", str(exc).splitlines()[0])
                    else:
                        log.exception("triggerer tick failed; retrying")
                    stop.wait(1.0)
                    continue
                self.wait(min(POLL_SECONDS, self.settings.heartbeat_seconds))
        finally:
            self.close(self.clock.now())

    def wait(self, seconds: float) -> None:
        """Block until an outcome arrives or ``seconds`` pass."""
        with contextlib.suppress(queue.Empty):
            self._pending.append(self.outcomes.get(timeout=seconds))

    # -- the round ------------------------------------------------------------------
    def tick(self, now: datetime, *, force: bool = False) -> int:
        """One round; the number of events and errors recorded. ``force`` (tests) does
        every step now instead of at its pace."""
        mono = time.monotonic()
        if force or mono - self._last_renew >= self.settings.heartbeat_seconds:
            self._renew(now)
            self._last_renew = mono
        if force or mono - self._last_claim >= POLL_SECONDS:
            self.store.time_out_deferred(now)
            self._claim(now)
            self._last_claim = mono
        if self.watchers is not None:
            self.watchers.tick(now, force=force)
        done = self._record(now)
        self._rehome()
        return done

    def held(self) -> int:
        return len(self.where)

    def _renew(self, now: datetime) -> None:
        self.store.sweep_triggers()  # first: a swept trigger is dropped below
        mine = self.store.renew_triggers(self.id, now, self.lease)
        for trigger_id in [t for t in self.where if t not in mine]:
            log.info("trigger %s is no longer ours (fired, cleared or taken over)", trigger_id)
            self._drop(trigger_id)
        lag = max(loop.read_lag() for loop in self.loops)
        watchers = self.watchers.count() if self.watchers is not None else 0
        self.store.triggerer_heartbeat(
            self.id, now, triggers=len(self.where), watchers=watchers, loop_lag=lag
        )

    def _claim(self, now: datetime) -> None:
        free = self.capacity - len(self.where)
        if free <= 0:
            return
        for row in self.store.claim_triggers(self.id, now, self.lease, limit=free):
            if row.id in self.where:
                continue
            self._start(row, now)

    def _start(self, row: TriggerRow, now: datetime, loop: TriggerLoop | None = None) -> None:
        try:
            cls = import_trigger_class(row.classpath, row.fileloc)
            trigger = cls(**load_kwargs(row.kwargs))
        except TriggerImportError as exc:
            where = f"{row.fileloc}: " if row.fileloc else ""
            self._fail(row.id, f"{where}{exc}", now)
            return
        except Exception as exc:  # noqa: BLE001 - the trigger's constructor raised
            self._fail(
                row.id, f"cannot build trigger {row.classpath}: {type(exc).__name__}: {exc}", now
            )
            return
        trigger.trigger_id = row.id
        trigger.reads = self.reads
        loop = loop or self.loop
        self.rows[row.id] = row
        self.where[row.id] = loop
        loop.add(row.id, trigger, row.classpath)

    def _drop(self, trigger_id: int) -> None:
        loop = self.where.pop(trigger_id, None)
        self.rows.pop(trigger_id, None)
        if loop is not None:
            loop.cancel(trigger_id)

    def _record(self, now: datetime) -> int:
        items, self._pending = self._pending, []
        while True:
            try:
                items.append(self.outcomes.get_nowait())
            except queue.Empty:
                break
        events: dict[int, str] = {}
        errors: list[tuple[int, str]] = []
        for loop, trigger_id, kind, value in items:
            if self.where.get(trigger_id) is not loop:
                continue  # moved to another loop (or dropped): that one answers
            if kind == "event":
                try:
                    events[trigger_id] = dump_kwargs(value, "the event's payload")
                except ValueError as exc:
                    errors.append((trigger_id, f"the trigger's event is unusable: {exc}"))
            else:
                errors.append((trigger_id, str(value)))
        done = 0
        batch = list(events.items())
        try:
            for i in range(0, len(batch), FIRE_BATCH):
                part = dict(batch[i : i + FIRE_BATCH])
                resumed = self.store.fire_triggers(part, now)
                for trigger_id in part:
                    self.where.pop(trigger_id, None)
                    self.rows.pop(trigger_id, None)
                done += len(part)
                self.fired += len(resumed)
                if resumed and self.on_fire is not None:
                    self.on_fire.set()
            for trigger_id, error in errors:
                self._fail(trigger_id, error, now)
                done += 1
        except Exception:
            # the database refused: keep what is not recorded for the next round
            left = [
                (self.where[t], t, "event", load_kwargs(events[t]))
                for t in events
                if t in self.where
            ]
            self._pending = left + [
                (self.where[t], t, "error", e) for t, e in errors if t in self.where
            ]
            raise
        return done

    def _fail(self, trigger_id: int, error: str, now: datetime) -> None:
        log.error("trigger %s failed: %s", trigger_id, error.splitlines()[0][:500])
        self.where.pop(trigger_id, None)
        self.rows.pop(trigger_id, None)
        state = self.store.fail_trigger(trigger_id, error, now)
        self.failed += 1
        if state is not None and self.on_finish is not None:
            self.on_finish.set()

    # -- a blocked loop -----------------------------------------------------------------
    def _new_loop(self) -> TriggerLoop:
        self._generation = getattr(self, "_generation", 0) + 1
        return TriggerLoop(
            self.outcomes,
            name=f"trigger-loop-{self._generation}",
            block_seconds=self.block_seconds,
            on_block=self._blocked,
        )

    def _blocked(self, loop: TriggerLoop, trigger_id: int | None, where: str, lag: float) -> None:
        """From the loop's monitor thread: name the blocker in the store (metrics)."""
        row = self.rows.get(trigger_id) if trigger_id is not None else None
        by = f"{where}" + (f" [{row.classpath}]" if row is not None else "")
        try:
            self.store.triggerer_blocked(self.id, self.clock.now(), by=by, lag=lag)
        except Exception as exc:  # noqa: BLE001
            log.warning("could not record the blocked loop: %s", str(exc).splitlines()[0])

    def _rehome(self) -> None:
        """A loop blocked for twice ``block_seconds``: every other trigger on it moves to a
        fresh loop (rebuilt from its row), so they keep firing; the blocker stays."""
        now = time.monotonic()
        for loop in list(self.loops):
            blocked = loop.blocked_since is not None and now - loop.beat >= 2 * self.block_seconds
            if blocked and loop is self.loop:
                self.loop = self._new_loop()
                self.loops.append(self.loop)
                moved = [t for t, lp in self.where.items() if lp is loop and t != loop.blocked_by]
                log.warning(
                    "moving %d trigger(s) off the blocked %s to %s",
                    len(moved),
                    loop.thread.name,
                    self.loop.thread.name,
                )
                clock_now = self.clock.now()
                for trigger_id in moved:
                    row = self.rows[trigger_id]
                    loop.cancel(trigger_id)
                    self._start(row, clock_now, self.loop)
            elif loop is not self.loop and not blocked and not loop.held():
                loop.stop()  # an old loop whose blocker has ended
                self.loops.remove(loop)
