"""Asset watchers on the real brokers (issue 30 item 2), on both backends: a message
becomes one asset event (its extra is the message) that starts the consuming DAG's
run; a crash between the commit and the ack redelivers the message and makes no
second event; a bad message is rejected with its reason recorded and acked; the
watchers are leased to one triggerer."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from datetime import UTC, datetime

import pytest

from orchestrator.authoring.credentials import Connection
from orchestrator.engine.triggerer import Triggerer
from orchestrator.store.credentials.secret_box import box_of

DAG = """
from orchestrator import DAG, Asset, task
from orchestrator.watchers import *

orders = Asset("s3://lake/orders", watchers=[{watcher}])

with DAG("consumer", schedule=orders) as dag:
    @task
    def consume(ctx):
        return [e.extra for e in ctx.triggering_asset_events]
"""

BROKERS = {
    "redis": ("redis", 6379, None, None, "RedisStreamWatcher(conn_id='bus', stream={src!r})"),
    "rabbitmq": ("amqp", 5672, "guest", "guest", "RabbitMQWatcher(conn_id='bus', queue={src!r})"),
    "nats": ("nats", 4222, None, None, "NatsWatcher(conn_id='bus', subject={src!r})"),
    "mqtt": ("mqtt", 1883, None, None, "MqttWatcher(conn_id='bus', topic={src!r})"),
}


async def _publish(kind: str, src: str, bodies: list[tuple[str, bytes]]) -> None:
    if kind == "redis":
        import redis.asyncio as aioredis

        r = aioredis.Redis()
        for _, body in bodies:
            await r.xadd(src, {"data": body})
        await r.aclose()
    elif kind == "rabbitmq":
        import aio_pika

        conn = await aio_pika.connect("amqp://guest:guest@127.0.0.1/")
        ch = await conn.channel()
        await ch.declare_queue(src, durable=True)
        for mid, body in bodies:
            await ch.default_exchange.publish(aio_pika.Message(body, message_id=mid), src)
        await conn.close()
    elif kind == "nats":
        import nats

        nc = await nats.connect("nats://127.0.0.1:4222")
        js = nc.jetstream()
        for mid, body in bodies:
            await js.publish(src, body, headers={"Nats-Msg-Id": mid})
        await nc.close()
    elif kind == "mqtt":
        import aiomqtt

        async with aiomqtt.Client("127.0.0.1", 1883) as c:
            for _, body in bodies:
                await c.publish(src, body, qos=1)


def _source(kind: str) -> str:
    tag = uuid.uuid4().hex[:10]
    return {"redis": f"orders-{tag}", "rabbitmq": f"orders-{tag}", "nats": f"orders.{tag}",
            "mqtt": f"lake/orders/{tag}"}[kind]  # fmt: skip


def _setup(harness, write_dag, kind: str) -> tuple[Triggerer, str]:
    scheme, port, login, password, watcher = BROKERS[kind]
    src = _source(kind)
    harness.store.add_connection(
        Connection("bus", scheme, host="127.0.0.1", port=port, login=login, password=password),
        datetime.now(UTC), box_of(harness.settings),
    )  # fmt: skip
    write_dag("consumer.py", DAG.format(watcher=watcher.format(src=src)))
    assert harness.parse().dags == 1
    t = Triggerer(harness.store, harness.clock, harness.settings, triggerer_id="t-watch")
    t.start(harness.clock.now())
    return t, src


def _wait(t: Triggerer, done, seconds: float = 20.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t.tick(t.clock.now(), force=True)
        value = done()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def _connected(store):
    return [w for w in store.watcher_states() if w.state == "connected"]


@pytest.mark.parametrize("kind", sorted(BROKERS))
def test_a_message_becomes_one_event_that_starts_the_consuming_run(harness, write_dag, kind):
    import asyncio

    store = harness.store
    t, src = _setup(harness, write_dag, kind)
    try:
        [w] = _wait(t, lambda: _connected(store))
        assert w.kind == kind and w.triggerer_id == "t-watch"
        asyncio.run(_publish(kind, src, [("m1", b'{"order": 1}'), ("m2", b'{"order": 2}'),
                                          ("m3", b"not json"), ("m4", b'[1, 2]')]))  # fmt: skip
        _wait(t, lambda: (x := store.watcher(w.key)) and x.messages + x.rejected == 4)
        w = store.watcher(w.key)
        assert (w.messages, w.rejected) == (2, 2)
        events = store.asset_events("s3://lake/orders")
        assert sorted(e.extra["order"] for e in events) == [1, 2]
        rejected = [e.message for e in store.events(kind="watcher_rejected", limit=10)]
        assert any("is not JSON" in r for r in rejected)
        assert any("not an object" in r for r in rejected)
        harness.tick()  # the scheduler creates the consuming run
        [run] = store.list_runs("consumer")
        assert harness.run_until_finished(run.run_id).state == "success"
    finally:
        t.close(harness.clock.now())


@pytest.mark.parametrize("kind", sorted(BROKERS))
def test_a_crash_between_commit_and_ack_redelivers_without_a_second_event(
    harness, write_dag, kind, monkeypatch
):
    """The first ack never reaches the broker (as if the triggerer died right after the
    commit): the broker delivers the messages again, they are found by message id and
    acked, and each makes exactly one event."""
    import asyncio

    from orchestrator.engine import watcher_brokers

    if kind == "nats":  # redelivery after ack_wait
        BROKERS["nats"] = BROKERS["nats"][:4] + (
            "NatsWatcher(conn_id='bus', subject={src!r}, ack_wait=1.0)",)  # fmt: skip
    cls = watcher_brokers.BROKERS[kind]
    real_ack, crashed = cls.ack, []

    async def crashing_ack(self, batch):
        if not crashed:
            crashed.append(len(batch))
            raise ConnectionError("the process died before the ack")
        await real_ack(self, batch)

    monkeypatch.setattr(cls, "ack", crashing_ack)
    store = harness.store
    dupes: list[str] = []
    real_record = store.record_messages

    def counting(key, items, now, **kw):
        out = real_record(key, items, now, **kw)
        dupes.extend(o for o in out if o == "duplicate")
        return out

    monkeypatch.setattr(store, "record_messages", counting)
    t, src = _setup(harness, write_dag, kind)
    try:
        [w] = _wait(t, lambda: _connected(store))
        asyncio.run(
            _publish(kind, src, [(f"m{i}", json.dumps({"n": i}).encode()) for i in range(3)])
        )
        _wait(t, lambda: len(store.asset_events("s3://lake/orders")) == 3 and crashed)
        # redelivered and acked: the duplicates are seen, no new event
        _wait(t, lambda: len(dupes) >= crashed[0], 30)  # the batch whose ack was lost
        time.sleep(0.5)
        events = store.asset_events("s3://lake/orders")
        assert sorted(e.extra["n"] for e in events) == [0, 1, 2]
        assert store.watcher(w.key).messages == 3
    finally:
        t.close(harness.clock.now())
        if kind == "nats":
            BROKERS["nats"] = BROKERS["nats"][:4] + (
                "NatsWatcher(conn_id='bus', subject={src!r})",)  # fmt: skip


def _counting_connects(monkeypatch, kind: str) -> list:
    """Each broker client the watcher connects, in order."""
    from orchestrator.engine import watcher_brokers

    cls, made = watcher_brokers.BROKERS[kind], []
    real = cls.connect

    async def counting(self):
        made.append(self)
        await real(self)

    monkeypatch.setattr(cls, "connect", counting)
    return made


@pytest.mark.parametrize("kind", sorted(BROKERS))
def test_a_watcher_keeps_its_connection_from_one_batch_to_the_next(
    harness, write_dag, kind, monkeypatch
):
    """Messages sent one at a time are each a batch of their own: the watcher reads
    them all over the connection it made first (RabbitMQ's reconnected after every
    batch, half a second of backoff each, before its consumer was kept)."""
    import asyncio

    made = _counting_connects(monkeypatch, kind)
    store = harness.store
    t, src = _setup(harness, write_dag, kind)
    try:
        _wait(t, lambda: _connected(store))
        for n in range(3):
            asyncio.run(_publish(kind, src, [(f"m{n}", json.dumps({"n": n}).encode())]))
            _wait(t, lambda n=n: len(store.asset_events("s3://lake/orders")) == n + 1)
        assert len(made) == 1
        assert [w.state for w in store.watcher_states()] == ["connected"]
    finally:
        t.close(harness.clock.now())


def test_a_rabbitmq_channel_that_closes_is_reconnected_and_loses_nothing(
    harness, write_dag, monkeypatch
):
    """The broker closes the watcher's connection while it waits for deliveries: the
    watcher notices (state ``retrying``), connects again and reads what came meanwhile."""
    import asyncio

    from orchestrator.engine import watcher_runtime

    monkeypatch.setattr(watcher_runtime, "FIRST_BACKOFF", 0.1)
    made = _counting_connects(monkeypatch, "rabbitmq")
    store = harness.store
    t, src = _setup(harness, write_dag, "rabbitmq")
    try:
        [w] = _wait(t, lambda: _connected(store))
        asyncio.run(_publish("rabbitmq", src, [("a", b'{"n": 1}')]))
        _wait(t, lambda: len(store.asset_events("s3://lake/orders")) == 1)
        first = made[0]
        t.loop.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(first.connection.close()))
        _wait(t, lambda: len(made) == 2 and store.watcher(w.key).state == "connected")
        assert store.watcher(w.key).last_error.startswith("ConnectionError")
        asyncio.run(_publish("rabbitmq", src, [("b", b'{"n": 2}')]))
        _wait(t, lambda: len(store.asset_events("s3://lake/orders")) == 2)
        assert sorted(e.extra["n"] for e in store.asset_events("s3://lake/orders")) == [1, 2]
    finally:
        t.close(harness.clock.now())


class _Proxy:
    """A TCP proxy to Redis that the test can close and open again: the broker's port
    going away for this watcher only (the machine's Redis serves others meanwhile)."""

    def __init__(self, target_port: int) -> None:
        import socket
        import threading

        self.target = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.listener.close()
        self.open_ = threading.Event()
        self.conns: list = []
        self.start()

    def start(self) -> None:
        import socket
        import threading

        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self.listener.listen(16)
        self.open_.set()
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _accept(self, listener) -> None:
        import socket
        import threading

        while self.open_.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()

    def stop(self) -> None:
        import socket

        self.open_.clear()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        self.listener.close()
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self.conns = []


def test_a_broker_that_goes_away_is_retried_shown_on_health_and_alerted_and_loses_nothing(
    harness, write_dag, settings
):
    import asyncio

    from orchestrator.engine import watcher_runtime
    from webui import create_app

    watcher_runtime.FIRST_BACKOFF = 0.2
    store = harness.store
    proxy = _Proxy(6379)
    src = _source("redis")
    store.add_connection(Connection("bus", "redis", host="127.0.0.1", port=proxy.port),
                         datetime.now(UTC), box_of(settings))  # fmt: skip
    write_dag(
        "consumer.py", DAG.format(watcher=f"RedisStreamWatcher(conn_id='bus', stream={src!r})")
    )
    harness.parse()
    t = Triggerer(store, harness.clock, settings, triggerer_id="t-outage")
    t.start(harness.clock.now())
    client = create_app(settings, store).test_client()
    try:
        [w] = _wait(t, lambda: _connected(store))
        asyncio.run(_publish("redis", src, [("a", b'{"n": 1}')]))
        _wait(t, lambda: len(store.asset_events("s3://lake/orders")) == 1)
        proxy.stop()  # the broker's port closes under the watcher
        _wait(t, lambda: store.watcher(w.key).state == "retrying")
        health = client.get("/health")
        assert health.status_code == 503
        assert "cannot reach its broker" in health.get_json()["checks"]["watchers"]["message"]
        assert any(a.kind == "watcher_down" for a in store.list_alerts())
        asyncio.run(_publish("redis", src, [("b", b'{"n": 2}'), ("c", b'{"n": 3}')]))  # meanwhile
        _wait(t, lambda: store.watcher(w.key).failures >= 3)  # it keeps retrying, with backoff
        proxy.start()
        _wait(t, lambda: len(store.asset_events("s3://lake/orders")) == 3, 30)
        assert store.watcher(w.key).state == "connected"
        assert sorted(e.extra["n"] for e in store.asset_events("s3://lake/orders")) == [1, 2, 3]
        assert client.get("/health").get_json()["checks"]["watchers"]["ok"] is True
    finally:
        watcher_runtime.FIRST_BACKOFF = 0.5
        t.close(harness.clock.now())
        proxy.stop()


def test_a_postgres_log_table_read_on_notify_makes_each_row_one_event(harness, write_dag, settings):
    """PostgresNotifyWatcher: rows of a table (the durable log) read after each NOTIFY;
    the cursor moves in the events' transaction, so a restart repeats nothing."""
    import psycopg

    store = harness.store
    table = f"orders_log_{uuid.uuid4().hex[:8]}"
    channel = f"orders_{uuid.uuid4().hex[:8]}"
    pg = psycopg.connect("host=127.0.0.1 user=postgres dbname=test", autocommit=True)
    pg.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, payload jsonb NOT NULL)")
    store.add_connection(Connection("pglog", "postgres", host="127.0.0.1", port=5432,
                                    login="postgres", schema="test"),
                         datetime.now(UTC), box_of(settings))  # fmt: skip
    write_dag("consumer.py", DAG.format(
        watcher=f"PostgresNotifyWatcher(conn_id='pglog', channel={channel!r}, table={table!r})"))  # fmt: skip
    harness.parse()
    t = Triggerer(store, harness.clock, settings, triggerer_id="t-pg")
    t.start(harness.clock.now())
    try:
        [w] = _wait(t, lambda: _connected(store))
        for n in (1, 2):
            pg.execute(f"INSERT INTO {table} (payload) VALUES (%s)", (json.dumps({"n": n}),))
        pg.execute(f"INSERT INTO {table} (payload) VALUES ('[1]')")
        pg.execute(f"NOTIFY {channel}")
        _wait(t, lambda: (x := store.watcher(w.key)) and x.messages + x.rejected == 3)
        assert sorted(e.extra["n"] for e in store.asset_events("s3://lake/orders")) == [1, 2]
        assert store.watcher(w.key).cursor == "3"
        t.close(harness.clock.now())  # a restart reads after the cursor: nothing again
        t = Triggerer(store, harness.clock, settings, triggerer_id="t-pg2")
        t.start(harness.clock.now())
        _wait(t, lambda: [x for x in _connected(store) if x.triggerer_id == "t-pg2"])
        pg.execute(f"INSERT INTO {table} (payload) VALUES (%s)", (json.dumps({"n": 3}),))
        pg.execute(f"NOTIFY {channel}")
        _wait(t, lambda: len(store.asset_events("s3://lake/orders")) == 3)
        assert sorted(e.extra["n"] for e in store.asset_events("s3://lake/orders")) == [1, 2, 3]
    finally:
        t.close(harness.clock.now())
        pg.execute(f"DROP TABLE {table}")
        pg.close()
