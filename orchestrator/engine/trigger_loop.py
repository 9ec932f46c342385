"""One asyncio event loop in a thread of its own, running triggers (issue 30).

The triggerer hands a loop built trigger objects (``add``) and takes their outcomes
from ``outcomes`` (a thread-safe queue of ``(loop, trigger_id, kind, value)``, kind
``"event"`` with the first event's payload or ``"error"`` with a traceback). A small
coroutine stamps ``beat`` every ``BEAT_SECONDS``; a monitor thread reads it and, when
the loop has not beaten for ``block_seconds``, names the task running on it (the
trigger, and the file and line it is stuck at, from the loop thread's frame) through
``on_block``: a ``time.sleep(5)`` in a trigger's ``run`` is named within a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
BEAT_SECONDS = 0.05
_SKIP = (os.sep + "asyncio" + os.sep, os.sep + "threading.py", __file__.rstrip("c"))


class TriggerLoop:
    """Runs triggers on its own event loop; thread-safe ``add`` / ``cancel``."""

    def __init__(
        self,
        outcomes: queue.Queue,
        *,
        name: str = "trigger-loop",
        block_seconds: float = 0.5,
        on_block: Callable[[TriggerLoop, int | None, str, float], None] | None = None,
    ) -> None:
        self.outcomes = outcomes
        self.block_seconds = block_seconds
        self.on_block = on_block
        self.loop = asyncio.new_event_loop()
        self.tasks: dict[int, asyncio.Task] = {}  # read from other threads: ids only
        self.named: dict[str, asyncio.Task] = {}  # asset watchers, by key
        self.beat = time.monotonic()
        self.blocked_since: float | None = None
        self.blocked_by: int | None = None
        self.max_lag = 0.0  # the longest lag seen since the last read_lag()
        self._stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()
        self._monitor = threading.Thread(target=self._watch, name=f"{name}-monitor", daemon=True)
        self._monitor.start()

    # -- from other threads ---------------------------------------------------------
    def add(self, trigger_id: int, trigger: Any, label: str) -> None:
        self._call(self._start, trigger_id, trigger, label)

    def cancel(self, trigger_id: int) -> None:
        self._call(self._cancel, trigger_id)

    def _call(self, fn: Any, *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has stopped: nothing to do
            self.loop.call_soon_threadsafe(fn, *args)

    def held(self) -> set[int]:
        return set(self.tasks)

    def spawn(self, name: str, factory: Callable[[], Any]) -> None:
        """Run the coroutine ``factory()`` as task ``name`` (an asset watcher) until
        ``stop_task(name)``."""
        self._call(self._spawn, name, factory)

    def stop_task(self, name: str) -> None:
        self._call(self._stop_task, name)

    def read_lag(self) -> float:
        lag = max(self.max_lag, time.monotonic() - self.beat - BEAT_SECONDS, 0.0)
        self.max_lag = 0.0
        return lag

    def stop(self) -> None:
        self._stopping.set()
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._shutdown)
        self.thread.join(5)

    # -- on the loop ------------------------------------------------------------------
    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.create_task(self._heartbeat(), name="heartbeat")
        try:
            self.loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                self.loop.close()

    async def _heartbeat(self) -> None:
        while True:
            now = time.monotonic()
            self.max_lag = max(self.max_lag, now - self.beat - BEAT_SECONDS)
            self.beat = now
            await asyncio.sleep(BEAT_SECONDS)

    def _start(self, trigger_id: int, trigger: Any, label: str) -> None:
        if trigger_id in self.tasks:
            return
        self.tasks[trigger_id] = self.loop.create_task(
            self._run(trigger_id, trigger), name=f"trigger {trigger_id} ({label})"
        )

    def _spawn(self, name: str, factory: Callable[[], Any]) -> None:
        if name not in self.named:
            self.named[name] = self.loop.create_task(factory(), name=f"watcher {name}")

    def _stop_task(self, name: str) -> None:
        task = self.named.pop(name, None)
        if task is not None:
            task.cancel()

    def _cancel(self, trigger_id: int) -> None:
        task = self.tasks.pop(trigger_id, None)
        if task is not None:
            task.cancel()

    async def _run(self, trigger_id: int, trigger: Any) -> None:
        try:
            async for event in trigger.run():
                self.outcomes.put((self, trigger_id, "event", getattr(event, "payload", event)))
                return
            self.outcomes.put((self, trigger_id, "error", "the trigger ended without an event"))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - the trigger's error fails its task
            text = "".join(traceback.format_exception(exc))
            self.outcomes.put(
                (
                    self,
                    trigger_id,
                    "error",
                    f"the trigger raised {type(exc).__name__}: {exc}\n{text}",
                )
            )
        finally:
            self.tasks.pop(trigger_id, None)
            with contextlib.suppress(Exception):
                trigger.cleanup()

    def _shutdown(self) -> None:
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.call_later(0.2, self.loop.stop)

    # -- the monitor thread -------------------------------------------------------------
    def _watch(self) -> None:
        while not self._stopping.wait(BEAT_SECONDS * 2):
            if not self.thread.is_alive():
                return
            lag = time.monotonic() - self.beat
            if lag < self.block_seconds:
                if self.blocked_since is not None:
                    log.warning("event loop %s unblocked after %.2fs", self.thread.name, lag)
                self.blocked_since = self.blocked_by = None
                continue
            if self.blocked_since is not None:
                continue  # named already
            trigger_id, where = self._culprit()
            if trigger_id is None and "selectors.py" in where:
                continue  # idle in select: starved of the CPU (a loaded machine), not blocked
            self.blocked_since = self.beat
            self.blocked_by = trigger_id
            log.error("event loop blocked for %.2fs by %s", lag, where)
            self.max_lag = max(self.max_lag, lag)
            if self.on_block is not None:
                try:
                    self.on_block(self, trigger_id, where, lag)
                except Exception:  # noqa: BLE001 - reporting must not stop the watch
                    log.exception("reporting a blocked event loop failed")

    def _culprit(self) -> tuple[int | None, str]:
        """The trigger running on the loop now, and the user code line it is at."""
        task = None
        with contextlib.suppress(Exception):
            task = asyncio.current_task(self.loop)
        name = task.get_name() if task is not None else "no task (a callback)"
        trigger_id = None
        if name.startswith("trigger "):
            with contextlib.suppress(ValueError):
                trigger_id = int(name.split()[1])
        frame = sys._current_frames().get(self.thread.ident or -1)
        at = ""
        if frame is not None:
            stack = traceback.extract_stack(frame)
            mine = [f for f in stack if not any(s in f.filename for s in _SKIP)]
            if mine:
                f = mine[-1]
                at = f" at {os.path.relpath(f.filename)}:{f.lineno} in {f.name}"
        return trigger_id, f"{name}{at}"
