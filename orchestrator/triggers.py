"""Triggers for DAG files (issue 30)::

    from orchestrator.triggers import (AssetEventTrigger, DagStateTrigger, DateTimeTrigger,
                                       FileTrigger, HttpTrigger, TimeDeltaTrigger)

A public name kept for DAG files; the classes live in
:mod:`orchestrator.authoring.builtin_triggers`. Write your own by subclassing
``orchestrator.BaseTrigger``.
"""

from orchestrator.authoring.builtin_triggers import (
    AssetEventTrigger,
    DagStateTrigger,
    DateTimeTrigger,
    FileTrigger,
    HttpTrigger,
    TimeDeltaTrigger,
)
from orchestrator.authoring.triggers import BaseTrigger, TaskDeferred, TriggerEvent

__all__ = [
    "AssetEventTrigger",
    "BaseTrigger",
    "DagStateTrigger",
    "DateTimeTrigger",
    "FileTrigger",
    "HttpTrigger",
    "TaskDeferred",
    "TimeDeltaTrigger",
    "TriggerEvent",
]
