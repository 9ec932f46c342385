"""The asset watchers' broker clients (issue 30), one class per broker, each with the
same three steps the runtime drives (:mod:`orchestrator.engine.watcher_runtime`):
``connect()``, ``batches()`` (an async iterator of lists of :class:`Message`) and
``ack(batch)`` after the batch's events are committed. Each imports its client library
(an optional extra: ``pip install 'orchestrator[watchers]'``) only when it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from orchestrator.authoring.credentials import Connection

BATCH = 500  # messages recorded in one transaction
GATHER_SECONDS = 0.005  # after the first message, how long a batch gathers more


@dataclass
class Message:
    id: str
    body: Any  # bytes, str or a dict
    token: Any = None  # what ack needs (the broker's message object)


def _sha(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
        h.update(b"\0")
    return "sha256:" + h.hexdigest()


class Broker:
    def __init__(self, conn: Connection, source: str, options: dict[str, Any], key: str) -> None:
        self.conn, self.source, self.options, self.key = conn, source, options, key

    async def connect(self) -> None:
        raise NotImplementedError

    def batches(self) -> AsyncIterator[list[Message]]:
        raise NotImplementedError

    async def ack(self, batch: list[Message]) -> None:
        raise NotImplementedError

    def cursor(self, batch: list[Message]) -> str | None:
        return None

    async def close(self) -> None:
        return None


class RedisStream(Broker):
    """XREADGROUP on a consumer group; its own pending entries first (a crash before
    XACK leaves them pending: they are read again), then new ones; XACK after commit."""

    async def connect(self) -> None:
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import ResponseError

        c = self.conn
        db = int(c.schema) if c.schema and c.schema.isdigit() else 0
        self.redis = aioredis.Redis(
            host=c.host or "127.0.0.1", port=c.port or 6379, db=db, username=c.login,
            password=c.password, socket_connect_timeout=3, socket_keepalive=True,
            retry=Retry(NoBackoff(), 0),  # the runtime's backoff, not the client's own
        )  # fmt: skip
        self.group = self.options.get("group") or "orchestrator"
        try:
            await self.redis.xgroup_create(self.source, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self.pending = True

    async def batches(self) -> AsyncIterator[list[Message]]:
        while True:
            start = "0" if self.pending else ">"
            reply = await self.redis.xreadgroup(
                self.group, "orchestrator", {self.source: start}, count=BATCH,
                block=None if self.pending else 1000,
            )  # fmt: skip
            entries = reply[0][1] if reply else []
            if self.pending and not entries:
                self.pending = False
                continue
            if entries:
                yield [Message(_text(i), _redis_body(f), i) for i, f in entries]

    async def ack(self, batch: list[Message]) -> None:
        await self.redis.xack(self.source, self.group, *[m.token for m in batch])

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.redis.aclose()


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _redis_body(fields: dict) -> Any:
    decoded = {_text(k): v for k, v in fields.items()}
    if "data" in decoded:
        return decoded["data"]
    try:
        return {k: _text(v) for k, v in decoded.items()}
    except UnicodeDecodeError:
        return b"\xff"  # not text: rejected as not UTF-8


class RabbitQueue(Broker):
    """A durable queue with a prefetch window; each message acked after commit.

    One consumer for the connection's life: its deliveries go to an ``asyncio.Queue``
    a batch is gathered from. (aio-pika's queue iterator closes its consumer when a
    wait on it is cancelled, so a timed gather on it reconnected after every batch.)
    """

    async def connect(self) -> None:
        import aio_pika

        c = self.conn
        self.connection = await aio_pika.connect(
            host=c.host or "127.0.0.1", port=c.port or 5672, login=c.login or "guest",
            password=c.password or "guest", virtualhost=c.schema or "/", timeout=5,
        )  # fmt: skip
        self.channel = await self.connection.channel()
        await self.channel.set_qos(prefetch_count=int(self.options.get("prefetch") or BATCH))
        self.queue = await self.channel.declare_queue(self.source, durable=True)
        self.inbox: asyncio.Queue = asyncio.Queue()
        await self.queue.consume(self.inbox.put)

    async def _next(self, timeout: float | None) -> Any:
        """The next delivery; None after ``timeout`` seconds; ConnectionError once the
        channel has closed (its unacked deliveries go back to the queue)."""
        if not self.inbox.empty():
            return self.inbox.get_nowait()
        get = asyncio.ensure_future(self.inbox.get())
        closed = asyncio.ensure_future(self.channel.closed())
        try:
            await asyncio.wait({get, closed}, timeout=timeout,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        finally:
            if not get.done():
                get.cancel()
            if not closed.done():
                closed.cancel()
        if get.done() and not get.cancelled():
            return get.result()
        if self.channel.is_closed:
            raise ConnectionError("the RabbitMQ channel closed")
        return None

    async def batches(self) -> AsyncIterator[list[Message]]:
        loop = asyncio.get_running_loop()
        while True:
            first = await self._next(None)
            batch = [first]
            end = loop.time() + GATHER_SECONDS
            while len(batch) < BATCH and (left := end - loop.time()) > 0:
                more = await self._next(left)
                if more is None:
                    break
                batch.append(more)
            yield [Message(m.message_id or _sha(m.body), m.body, m) for m in batch]

    async def ack(self, batch: list[Message]) -> None:
        for m in batch:
            await m.token.ack()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.connection.close()


class NatsStream(Broker):
    """A durable JetStream pull consumer; each message acked after commit."""

    async def connect(self) -> None:
        import nats
        from nats.js.errors import NotFoundError

        c = self.conn
        auth = {"user": c.login, "password": c.password} if c.login else {}
        self.nc = await nats.connect(
            servers=[f"nats://{c.host or '127.0.0.1'}:{c.port or 4222}"], connect_timeout=3,
            allow_reconnect=False, **auth,
        )  # fmt: skip
        self.js = self.nc.jetstream()
        try:
            self.stream = await self.js.find_stream_name_by_subject(self.source)
        except NotFoundError:
            self.stream = "ORCH_" + re.sub(r"[^A-Za-z0-9_]", "_", self.source)[:60]
            await self.js.add_stream(name=self.stream, subjects=[self.source])
        from nats.js.api import ConsumerConfig

        durable = self.options.get("durable") or "orchestrator"
        config = ConsumerConfig(ack_wait=float(self.options.get("ack_wait") or 30.0))
        self.sub = await self.js.pull_subscribe(
            self.source, durable=durable, stream=self.stream, config=config
        )

    async def batches(self) -> AsyncIterator[list[Message]]:
        from nats.errors import TimeoutError as NatsTimeout

        while True:
            try:
                msgs = await self.sub.fetch(BATCH, timeout=1)
            except (NatsTimeout, TimeoutError):
                continue
            yield [
                Message(
                    (m.headers or {}).get("Nats-Msg-Id")
                    or f"{self.stream}:{m.metadata.sequence.stream}",
                    m.data,
                    m,
                )
                for m in msgs
            ]

    async def ack(self, batch: list[Message]) -> None:
        for m in batch:
            await m.token.ack()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.nc.close()


class MqttTopic(Broker):
    """QoS 1 in a persistent session (a stable client id, clean_session off); PUBACK
    is sent only after the commit (paho's manual ack)."""

    async def connect(self) -> None:
        import aiomqtt

        c = self.conn
        client_id = self.options.get("client_id") or (
            "orchestrator-" + hashlib.sha256(self.key.encode()).hexdigest()[:16]
        )
        self.client = aiomqtt.Client(
            c.host or "127.0.0.1", port=c.port or 1883, username=c.login, password=c.password,
            identifier=client_id, clean_session=False, timeout=5,
        )  # fmt: skip
        self.client._client.manual_ack_set(True)  # PUBACK after the commit, not on receipt
        await self.client.__aenter__()
        await self.client.subscribe(self.source, qos=1)

    async def batches(self) -> AsyncIterator[list[Message]]:
        async for m in self.client.messages:
            payload = m.payload if isinstance(m.payload, bytes) else str(m.payload).encode()
            yield [Message(_sha(str(m.topic).encode(), payload), payload, m)]

    async def ack(self, batch: list[Message]) -> None:
        for m in batch:
            if m.token.qos > 0:
                self.client._client.ack(m.token.mid, m.token.qos)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.__aexit__(None, None, None)


class PostgresLog(Broker):
    """LISTEN on a channel; the table is the durable log: rows after the watcher's
    cursor, read on each NOTIFY and every ``POLL`` seconds. The cursor is stored with
    the events (the runtime passes ``cursor(batch)``), so no ack is needed."""

    POLL = 2.0

    def __init__(self, *args: Any, cursor: str | None = None) -> None:
        super().__init__(*args)
        self.position = int(cursor) if cursor and cursor.isdigit() else 0

    async def connect(self) -> None:
        import psycopg

        c = self.conn
        self.pg = await psycopg.AsyncConnection.connect(
            host=c.host or "127.0.0.1", port=c.port or 5432, user=c.login, password=c.password,
            dbname=c.schema or "postgres", autocommit=True, connect_timeout=5,
        )  # fmt: skip
        await self.pg.execute(f'LISTEN "{self.source}"')
        self.table = self.options["table"]

    async def batches(self) -> AsyncIterator[list[Message]]:
        while True:
            cur = await self.pg.execute(
                f'SELECT id, payload::text FROM "{self.table}" WHERE id > %s ORDER BY id LIMIT %s',
                (self.position, BATCH),
            )
            rows = await cur.fetchall()
            if rows:
                yield [Message(str(r[0]), r[1], r[0]) for r in rows]
                continue
            gen = self.pg.notifies(timeout=self.POLL, stop_after=1)
            async for _ in gen:
                pass

    def cursor(self, batch: list[Message]) -> str | None:
        return str(max(m.token for m in batch)) if batch else None

    async def ack(self, batch: list[Message]) -> None:
        if batch:
            self.position = max(self.position, max(m.token for m in batch))

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.pg.close()


BROKERS: dict[str, type[Broker]] = {
    "redis": RedisStream,
    "rabbitmq": RabbitQueue,
    "nats": NatsStream,
    "mqtt": MqttTopic,
    "postgres": PostgresLog,
}
__all__ = ["BROKERS", "Broker", "Message"]
