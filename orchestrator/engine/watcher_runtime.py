"""Asset watchers in the triggerer (issue 30): which run here, and the loop each runs.

``WatcherManager.tick`` (called by the triggerer's round) makes the stored watcher
rows match the assets the active DAG versions declare, extends the leases of the
watchers it runs (one a killed triggerer held is taken by another within a lease),
takes free ones and starts each as a task on the triggerer's event loop. A watcher's
loop connects to its broker, records each batch of messages with
``store.record_messages`` (events deduplicated by message id) and acks the batch only
after that commits; a broker that goes away is retried with backoff (0.5 s doubling
to ``watcher_max_backoff``), its state ``retrying`` on /health, the watchers page and
as an alert, until it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import time
from datetime import datetime, timedelta
from typing import Any

from orchestrator.authoring.watchers import watcher_key
from orchestrator.engine.secrets_chain import SecretsChain
from orchestrator.engine.watcher_brokers import BROKERS, PostgresLog
from orchestrator.store.triggers.watcher_store import EVENT, WatcherRecord

log = logging.getLogger(__name__)
FIRST_BACKOFF = 0.5
CLIENTS = {"redis": "redis.asyncio", "rabbitmq": "aio_pika", "nats": "nats",
           "mqtt": "aiomqtt", "postgres": "psycopg"}  # fmt: skip


def declared_watchers(store: Any) -> list[dict[str, Any]]:
    """Every watcher the active DAGs' current versions declare, once per key."""
    found: dict[str, dict[str, Any]] = {}
    for dag in store.list_dags():
        if not dag.is_active:
            continue
        try:
            spec = store.spec(dag.dag_id, dag.version_hash)
        except Exception:  # noqa: BLE001 - a version that cannot be read declares nothing
            continue
        for asset in spec.assets:
            for data in asset.get("watchers") or ():
                key = watcher_key(asset["uri"], data)
                found.setdefault(key, {"key": key, "asset_uri": asset["uri"], "kind": data["kind"],
                                       "conn_id": data["conn_id"], "source": data["source"],
                                       "spec": data.get("options") or {}})  # fmt: skip
    return [found[k] for k in sorted(found)]


class WatcherManager:
    """The watchers one triggerer runs."""

    def __init__(self, triggerer: Any) -> None:
        self.t = triggerer
        self.store = triggerer.store
        self.settings = triggerer.settings
        self.secrets = SecretsChain(self.store, self.settings)
        self.running: dict[str, Any] = {}  # key -> the loop it runs on
        self._last = 0.0

    def count(self) -> int:
        return len(self.running)

    def tick(self, now: datetime, *, force: bool = False) -> None:
        mono = time.monotonic()
        if not force and mono - self._last < self.settings.heartbeat_seconds:
            return
        self._last = mono
        self.store.sync_watchers(declared_watchers(self.store), now)
        lease = timedelta(seconds=self.settings.lease_seconds)
        mine = self.store.renew_watchers(self.t.id, now, lease)
        for key in [k for k in self.running if k not in mine]:
            log.info("asset watcher %s is no longer ours (removed, or taken over)", key)
            self.running.pop(key).stop_task(key)
        for rec in self.store.claim_watchers(self.t.id, now, lease, sorted(BROKERS)):
            if rec.key not in self.running:
                self._start(rec)

    def _start(self, rec: WatcherRecord) -> None:
        loop = self.t.loop
        self.running[rec.key] = loop
        loop.spawn(rec.key, lambda: self.run(rec))
        log.info("asset watcher %s started (%s %s)", rec.key, rec.kind, rec.source)

    def close(self) -> None:
        for key, loop in list(self.running.items()):
            loop.stop_task(key)
        self.running.clear()
        try:
            self.store.release_watchers(self.t.id)
        except Exception as exc:  # noqa: BLE001 - the leases expire anyway
            log.warning("could not give the watchers back: %s", str(exc).splitlines()[0])

    async def run(self, rec: WatcherRecord) -> None:
        """Connect, record, ack; on any failure wait (backoff) and start over."""
        backoff = FIRST_BACKOFF
        clock = self.t.clock
        while True:
            broker = None
            try:
                conn = await asyncio.to_thread(self.secrets.connection, rec.conn_id)
                if conn is None:
                    raise LookupError(f"connection {rec.conn_id!r} is not defined")
                cls = BROKERS[rec.kind]
                # the client library is imported in a thread: an import blocks a loop
                await asyncio.to_thread(importlib.import_module, CLIENTS[rec.kind])
                if cls is PostgresLog:
                    current = await asyncio.to_thread(self.store.watcher, rec.key)
                    broker = cls(conn, rec.source, rec.spec, rec.key,
                                 cursor=current.cursor if current else None)  # fmt: skip
                else:
                    broker = cls(conn, rec.source, rec.spec, rec.key)
                await broker.connect()
                await asyncio.to_thread(self.store.set_watcher_state, rec.key, "connected",
                                        clock.now())  # fmt: skip
                log.info("asset watcher %s connected", rec.key)
                backoff = FIRST_BACKOFF
                async for batch in broker.batches():
                    outcomes = await asyncio.to_thread(
                        self.store.record_messages, rec.key, [(m.id, m.body) for m in batch],
                        clock.now(), cursor=broker.cursor(batch),
                    )  # fmt: skip
                    await broker.ack(batch)  # only after the commit
                    for m, outcome in zip(batch, outcomes, strict=True):
                        if outcome.startswith("rejected"):
                            log.warning("asset watcher %s: message %s %s", rec.key, m.id, outcome)
                    if EVENT in outcomes and self.t.on_finish is not None:
                        self.t.on_finish.set()  # the scheduler creates the asset runs
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the broker (or the database) went away
                error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
                log.warning("asset watcher %s: %s; retrying in %.1fs", rec.key, error, backoff)
                with contextlib.suppress(Exception):  # the database may be down too
                    await asyncio.to_thread(self.store.set_watcher_state, rec.key, "retrying",
                                            clock.now(), error=error)  # fmt: skip
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.settings.watcher_max_backoff)
            finally:
                if broker is not None:
                    await broker.close()
