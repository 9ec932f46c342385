"""Asset watchers (issue 30), public as :mod:`orchestrator.watchers`: an asset's
``watchers=[...]`` turn messages of an outside system into asset events::

    from orchestrator import Asset
    from orchestrator.watchers import RedisStreamWatcher

    orders = Asset("s3://lake/orders",
                   watchers=[RedisStreamWatcher(conn_id="redis_default", stream="orders")])

Each takes ``conn_id=`` (a connection: host, port, login, password, schema) and its
source. A message becomes one event whose ``extra`` is the message (a JSON object),
deduplicated by the message's id; it is acknowledged to the broker only after the
event is committed. Watchers run in the triggerer (the webhook in the web server).
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")  # a PostgreSQL identifier we accept
_PATH = re.compile(r"[A-Za-z0-9_.~-]{1,200}")


class BaseWatcher:
    """An asset watcher's declaration; ``kind`` names its runtime, ``source`` what it
    reads (a stream, queue, subject, topic, channel or path)."""

    kind = ""
    source_name = ""

    def __init__(self, *, conn_id: str | None, source: str, **options: Any) -> None:
        where = _caller()
        name = type(self).__name__
        if self.kind != "webhook" and (not isinstance(conn_id, str) or not conn_id):
            raise _fail(f"{name}: conn_id must name a connection, got {conn_id!r}", where)
        if not isinstance(source, str) or not source or len(source) > 400:
            raise _fail(
                f"{name}: {self.source_name}= must be a non-empty string, got {source!r}", where
            )
        self.conn_id = conn_id or ""
        self.source = source
        self.options = options
        problem = self.check()
        if problem:
            raise _fail(f"{name}: {problem}", where)

    def check(self) -> str | None:
        return None

    def to_data(self) -> dict[str, Any]:
        return {"kind": self.kind, "conn_id": self.conn_id, "source": self.source,
                "options": dict(sorted(self.options.items()))}  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(conn_id={self.conn_id!r}, {self.source_name}={self.source!r})"
        )


class RedisStreamWatcher(BaseWatcher):
    """A Redis stream read through a consumer group (``group``, default
    ``orchestrator``); each entry is acked (XACK) after its event is committed. The
    entry's id is the message id; its ``data`` field (JSON text) is the message, or
    else its fields as an object."""

    kind, source_name = "redis", "stream"

    def __init__(self, *, conn_id: str, stream: str, group: str = "orchestrator") -> None:
        super().__init__(conn_id=conn_id, source=stream, group=group)


class RabbitMQWatcher(BaseWatcher):
    """A RabbitMQ queue (declared durable), acked manually after the commit. The
    message id is the AMQP ``message_id`` property, else the body's sha256."""

    kind, source_name = "rabbitmq", "queue"

    def __init__(self, *, conn_id: str, queue: str, prefetch: int = 500) -> None:
        super().__init__(conn_id=conn_id, source=queue, prefetch=prefetch)


class NatsWatcher(BaseWatcher):
    """A NATS JetStream subject through a durable pull consumer (``durable``; the
    stream holding the subject is created if there is none). The message id is the
    ``Nats-Msg-Id`` header, else the stream sequence. A message not acked within
    ``ack_wait`` seconds (a crash before the ack) is delivered again."""

    kind, source_name = "nats", "subject"

    def __init__(
        self, *, conn_id: str, subject: str, durable: str = "orchestrator", ack_wait: float = 30.0
    ) -> None:
        super().__init__(conn_id=conn_id, source=subject, durable=durable, ack_wait=ack_wait)

    def check(self) -> str | None:
        if not _NAME.fullmatch(self.options["durable"]):
            return f"durable must be letters, digits and '_', got {self.options['durable']!r}"
        wait = self.options["ack_wait"]
        if not isinstance(wait, int | float) or isinstance(wait, bool) or wait <= 0:
            return f"ack_wait must be a positive number of seconds, got {wait!r}"
        return None


class MqttWatcher(BaseWatcher):
    """An MQTT topic at QoS 1 in a persistent session (``client_id``, default derived
    from the asset and topic), each message acked (PUBACK) after the commit. MQTT
    carries no stable message id: it is the sha256 of topic and payload, so two
    identical messages count once (put an id in the payload to tell them apart)."""

    kind, source_name = "mqtt", "topic"

    def __init__(self, *, conn_id: str, topic: str, client_id: str | None = None) -> None:
        super().__init__(conn_id=conn_id, source=topic, client_id=client_id)


class PostgresNotifyWatcher(BaseWatcher):
    """A PostgreSQL table as the durable log (columns ``id`` bigserial and ``payload``
    json/text), read after each NOTIFY on ``channel`` (and every few seconds without
    one). The rows' id is the message id; the watcher's cursor moves in the same
    transaction as the events, so nothing is missed or repeated."""

    kind, source_name = "postgres", "channel"

    def __init__(self, *, conn_id: str, channel: str, table: str) -> None:
        super().__init__(conn_id=conn_id, source=channel, table=table)

    def check(self) -> str | None:
        for what, value in (("channel", self.source), ("table", self.options["table"])):
            if not isinstance(value, str) or not _NAME.fullmatch(value):
                return f"{what} must be a plain SQL name (letters, digits, '_'), got {value!r}"
        return None


class WebhookWatcher(BaseWatcher):
    """A signed HTTP endpoint, ``POST /hooks/<path>`` on the web server. The sender
    signs ``<timestamp>.<body>`` with HMAC-SHA256 and the connection's password as
    the secret, in the header ``Orchestrator-Signature: t=<unix time>,v1=<hex>`` (as
    Stripe does); ``Orchestrator-Delivery`` is the message id. A wrong signature, or a
    timestamp outside ``replay_window`` seconds, is refused (401) and recorded."""

    kind, source_name = "webhook", "path"

    def __init__(self, *, conn_id: str, path: str, replay_window: int = 300) -> None:
        super().__init__(conn_id=conn_id, source=path, replay_window=replay_window)

    def check(self) -> str | None:
        if not _PATH.fullmatch(self.source):
            return f"path must be 1-200 letters, digits, '.', '_', '~' or '-', got {self.source!r}"
        window = self.options["replay_window"]
        if not isinstance(window, int) or isinstance(window, bool) or not 1 <= window <= 86400:
            return f"replay_window must be 1-86400 seconds, got {window!r}"
        return None


def watcher_key(uri: str, data: dict[str, Any]) -> str:
    return f"{uri}#{data['kind']}:{data['source']}"
