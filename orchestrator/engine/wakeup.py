"""Cross-process wakeups: PostgreSQL LISTEN/NOTIFY, so nobody waits for a poll.

A scheduler that released tasks notifies ``orchestrator_tasks`` and every listening
worker claims at once; a worker that finished a try notifies ``orchestrator_finished``
and the scheduler releases the downstream tasks at once. Polling stays as the
fallback: a lost notification only costs one poll interval, never correctness.

On SQLite (one process), in-process events do the same job and this is a no-op.

>>> wake = threading.Event()                                        # doctest: +SKIP
>>> listener = Listener(url, {TASKS: wake}); listener.start()       # doctest: +SKIP
>>> Notifier(url).event(TASKS).set()  # sets nothing locally, wakes every listener
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Any

from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

TASKS = "orchestrator_tasks"
FINISHED = "orchestrator_finished"


def conninfo(url: str) -> str | None:
    """A libpq connection string for a PostgreSQL SQLAlchemy URL, else None."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return None
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


class WakeEvent(threading.Event):
    """A ``threading.Event`` that can also be waited on with ``select`` (``fileno()``).

    A busy worker waits for its task processes' pipes; with this event among them it
    also wakes the moment tasks are released, instead of after its poll timeout.
    """

    def __init__(self) -> None:
        super().__init__()
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)

    def set(self) -> None:
        super().set()
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._w, b"x")

    def clear(self) -> None:
        super().clear()  # first: a set() racing with the drain stays visible in is_set()
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._r, 4096):
                pass

    def fileno(self) -> int:
        return self._r

    def __del__(self) -> None:
        for fd in (self._r, self._w):
            with contextlib.suppress(OSError):
                os.close(fd)


class Listener:
    """A thread that LISTENs on channels and sets an event per notification."""

    def __init__(self, url: str, events: dict[str, threading.Event]) -> None:
        self.dsn = conninfo(url)
        self.events = events
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.connected = threading.Event()

    def start(self) -> Listener:
        if self.dsn is not None:
            self._thread = threading.Thread(target=self._run, name="listen", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        import psycopg

        backoff = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
                    for channel in self.events:
                        conn.execute(f'LISTEN "{channel}"')
                    self.connected.set()
                    backoff = 0.5
                    # after (re)connecting, wake everyone once: notifications may have been lost
                    for event in self.events.values():
                        event.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            event = self.events.get(note.channel)
                            if event is not None:
                                event.set()
            except Exception as exc:  # noqa: BLE001 - reconnect whatever happened
                self.connected.clear()
                log.warning("LISTEN connection lost (%s); retrying in %.1fs", exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)


class _NotifyEvent:
    """Looks like a threading.Event to its owner; ``set()`` also sends a NOTIFY."""

    def __init__(self, notifier: Notifier, channel: str, local: threading.Event | None) -> None:
        self.notifier = notifier
        self.channel = channel
        self.local = local

    def set(self) -> None:
        if self.local is not None:
            self.local.set()
        self.notifier.notify(self.channel)


class Notifier:
    """Sends NOTIFYs over one lazily opened autocommit connection."""

    def __init__(self, url: str) -> None:
        self.dsn = conninfo(url)
        self._conn: Any = None
        self._lock = threading.Lock()

    def event(self, channel: str, local: threading.Event | None = None) -> Any:
        return _NotifyEvent(self, channel, local)

    def notify(self, channel: str) -> None:
        if self.dsn is None:
            return
        import psycopg

        with self._lock:
            for _ in range(2):
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
                    self._conn.execute("SELECT pg_notify(%s, '')", (channel,))
                    return
                except Exception as exc:  # noqa: BLE001 - a lost wakeup costs one poll
                    log.debug("NOTIFY %s failed: %s", channel, exc)
                    self._close()

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._close()
