"""What bench/deferral.py's watcher scenarios need per broker (issue 30 item 3): the
watched DAG's source, the connection its watcher reads with, and a publisher that
sends one message at a time (the publish moment inside the message, as ``sent``).

The brokers are the machine's real services: Redis 6379, RabbitMQ 5672 (guest/guest),
NATS JetStream 4222, Mosquitto 1883, PostgreSQL 5432 (trust); the webhook is the web
UI's ``POST /hooks/<path>``, served in-process as ``standalone`` serves it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import textwrap
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from typing import Any

KINDS = ("redis", "rabbitmq", "nats", "mqtt", "postgres", "webhook")
URI = "bench://orders"
DAG_ID = "watched"
SECRET = "bench-webhook-secret"
PG_DB = "postgres"  # the PostgresNotifyWatcher's log table lives here

# kind -> (connection type, port, login, password, watcher expression)
WATCHERS = {
    "redis": ("redis", 6379, None, None, "RedisStreamWatcher(conn_id='bus', stream={src!r})"),
    "rabbitmq": ("amqp", 5672, "guest", "guest", "RabbitMQWatcher(conn_id='bus', queue={src!r})"),
    "nats": ("nats", 4222, None, None, "NatsWatcher(conn_id='bus', subject={src!r})"),
    "mqtt": ("mqtt", 1883, None, None, "MqttWatcher(conn_id='bus', topic={src!r})"),
    "postgres": ("postgres", 5432, "postgres", None,
                 "PostgresNotifyWatcher(conn_id='bus', channel={src!r}, table={src!r})"),
    "webhook": ("http", None, None, SECRET, "WebhookWatcher(conn_id='bus', path={src!r})"),
}  # fmt: skip


def source_name(kind: str) -> str:
    """A fresh stream / queue / subject / topic / channel+table / path for one run."""
    tag = uuid.uuid4().hex[:10]
    return {"nats": f"bench.orders.{tag}", "mqtt": f"bench/orders/{tag}",
            "postgres": f"bench_log_{tag}"}.get(kind, f"bench-orders-{tag}")  # fmt: skip


def dag_source(kind: str, src: str) -> str:
    """The DAG scheduled on the watched asset; it allows as many active runs as the
    benchmark makes (nothing runs its task: the figure is the run's start)."""
    watcher = WATCHERS[kind][4].format(src=src)
    return textwrap.dedent(f"""
        from orchestrator import DAG, Asset, task
        from orchestrator.watchers import *

        orders = Asset({URI!r}, watchers=[{watcher}])

        with DAG({DAG_ID!r}, schedule=orders, max_active_runs=100000) as dag:
            @task
            def consume(ctx):
                pass
        """)


def connection(kind: str) -> Any:
    from orchestrator.authoring.credentials import Connection

    conn_type, port, login, password, _ = WATCHERS[kind]
    schema = PG_DB if kind == "postgres" else None
    return Connection("bus", conn_type, host="127.0.0.1", port=port, login=login,
                      password=password, schema=schema)  # fmt: skip


def prepare(kind: str, src: str) -> None:
    """What must exist before the watcher starts (the PostgreSQL log table)."""
    if kind == "postgres":
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={PG_DB}", autocommit=True) as pg:
            pg.execute(f"CREATE TABLE {src} (id bigserial PRIMARY KEY, payload jsonb NOT NULL)")


def cleanup(kind: str, src: str) -> None:
    import contextlib

    with contextlib.suppress(Exception):
        if kind == "postgres":
            import psycopg

            with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={PG_DB}",
                                 autocommit=True) as pg:  # fmt: skip
                pg.execute(f"DROP TABLE IF EXISTS {src}")
        elif kind == "redis":
            import redis

            redis.Redis().delete(src)


class Publisher:
    """One open connection to the broker; ``send(body)`` publishes one message and
    returns once the broker has taken it (a PUBACK, a JetStream ack, a 202 ...)."""

    def __init__(self, kind: str, src: str, web_url: str | None = None) -> None:
        self.kind, self.src, self.web_url = kind, src, web_url

    async def open(self) -> None:
        k = self.kind
        if k == "redis":
            import redis.asyncio as aioredis

            self.c = aioredis.Redis()
        elif k == "rabbitmq":
            import aio_pika

            self.c = await aio_pika.connect("amqp://guest:guest@127.0.0.1/")
            self.ch = await self.c.channel()
            await self.ch.declare_queue(self.src, durable=True)
        elif k == "nats":
            import nats

            self.c = await nats.connect("nats://127.0.0.1:4222")
            self.js = self.c.jetstream()
        elif k == "mqtt":
            import aiomqtt

            self.c = aiomqtt.Client("127.0.0.1", 1883)
            await self.c.__aenter__()
        elif k == "postgres":
            import psycopg

            self.c = await psycopg.AsyncConnection.connect(
                f"host=127.0.0.1 user=postgres dbname={PG_DB}", autocommit=True
            )

    async def send(self, n: int) -> None:
        mid = f"m{n}"
        body = json.dumps({"n": n, "sent": datetime.now(UTC).isoformat()}).encode()
        k = self.kind
        if k == "redis":
            await self.c.xadd(self.src, {"data": body})
        elif k == "rabbitmq":
            import aio_pika

            await self.ch.default_exchange.publish(aio_pika.Message(body, message_id=mid), self.src)
        elif k == "nats":
            await self.js.publish(self.src, body, headers={"Nats-Msg-Id": mid})
        elif k == "mqtt":
            await self.c.publish(self.src, body, qos=1)
        elif k == "postgres":  # the row and its NOTIFY in one transaction
            async with self.c.transaction():
                await self.c.execute(
                    f"INSERT INTO {self.src} (payload) VALUES (%s)", (body.decode(),)
                )
                await self.c.execute(f"NOTIFY {self.src}")
        elif k == "webhook":
            await asyncio.to_thread(self._post, mid, body)

    def _post(self, mid: str, body: bytes) -> None:
        stamp = str(int(time.time()))
        mac = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        req = urllib.request.Request(
            f"{self.web_url}/hooks/{self.src}", data=body, method="POST",
            headers={"Content-Type": "application/json", "Orchestrator-Delivery": mid,
                     "Orchestrator-Signature": f"t={stamp},v1={mac}"},
        )  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as resp:
            if resp.status != 202:
                raise RuntimeError(f"the webhook answered {resp.status}")

    async def close(self) -> None:
        k = self.kind
        if k == "redis":
            await self.c.aclose()
        elif k in ("rabbitmq", "nats", "postgres"):
            await self.c.close()
        elif k == "mqtt":
            await self.c.__aexit__(None, None, None)


def latencies(store: Any) -> list[tuple[float, float]]:
    """Per asset event, in ms: its run's start minus the message's publish moment, and
    the part of it after the event was committed (the scheduler's share)."""
    starts = {r.run_id: r.start_date for r in store.list_runs(DAG_ID, limit=100_000)}
    out = []
    for e in store.asset_events(URI, limit=100_000):
        run_id = e.triggered_runs[0] if e.triggered_runs else None
        if run_id is None or starts.get(run_id) is None:
            continue
        sent = datetime.fromisoformat(e.extra["sent"])
        out.append(((starts[run_id] - sent).total_seconds() * 1000,
                    (starts[run_id] - e.at).total_seconds() * 1000))  # fmt: skip
    return sorted(out)
