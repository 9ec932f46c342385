"""Asset watchers for DAG files (issue 30)::

    from orchestrator.watchers import (MqttWatcher, NatsWatcher, PostgresNotifyWatcher,
                                       RabbitMQWatcher, RedisStreamWatcher, WebhookWatcher)

A public name kept for DAG files; the declarations live in
:mod:`orchestrator.authoring.watchers`, their runtime in the triggerer
(:mod:`orchestrator.engine.watcher_runtime`).
"""

from orchestrator.authoring.watchers import (
    BaseWatcher,
    MqttWatcher,
    NatsWatcher,
    PostgresNotifyWatcher,
    RabbitMQWatcher,
    RedisStreamWatcher,
    WebhookWatcher,
)

__all__ = [
    "BaseWatcher",
    "MqttWatcher",
    "NatsWatcher",
    "PostgresNotifyWatcher",
    "RabbitMQWatcher",
    "RedisStreamWatcher",
    "WebhookWatcher",
]
