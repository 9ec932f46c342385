"""What shows what happened: the event log, alerts, and try logs shipped to the store."""

from orchestrator.store.observe.alert_store import AlertStore
from orchestrator.store.observe.events import EventStore
from orchestrator.store.observe.log_store import LogStore


class ObserveAggregate(EventStore, AlertStore, LogStore):
    """Tables ``events``, ``alerts``, ``alert_deliveries``, ``alert_cursors``, ``log_chunks``."""


__all__ = ["ObserveAggregate"]
