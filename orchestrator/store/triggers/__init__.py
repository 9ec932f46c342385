"""Triggers and triggerers (issue 30): a deferred task's trigger under a triggerer's
lease, its event resuming the task (through ``tasks/``), and the asset watchers
(through ``assets/``)."""

from orchestrator.store.triggers.trigger_store import TriggerStore
from orchestrator.store.triggers.triggerer_store import TriggererStore
from orchestrator.store.triggers.watcher_store import WatcherStore


class TriggersAggregate(TriggerStore, TriggererStore, WatcherStore):
    """Tables ``triggers``, ``triggerers``, ``watchers``, ``watcher_messages``."""


__all__ = ["TriggersAggregate"]
