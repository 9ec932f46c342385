"""Task instances and their tries: claims, heartbeats, outcomes, release, hand-back,
mapping expansion, concurrency gates, sensors' pokes and the marks people make."""

from orchestrator.store.tasks.claims import ClaimStore
from orchestrator.store.tasks.finish import FinishStore
from orchestrator.store.tasks.handback import HandbackStore
from orchestrator.store.tasks.release import ReleaseStore
from orchestrator.store.tasks.sensor_store import SensorStore
from orchestrator.store.tasks.task_outcomes import TaskOutcomeStore
from orchestrator.store.tasks.task_store import TaskStore
from orchestrator.store.tasks.ui_actions import UiActionStore
from orchestrator.store.tasks.xcoms import XcomStore


class TasksAggregate(
    ClaimStore,
    TaskStore,
    FinishStore,
    ReleaseStore,
    HandbackStore,
    TaskOutcomeStore,
    SensorStore,
    UiActionStore,
    XcomStore,
):
    """Tables ``task_instances``, ``task_tries``, ``task_xcoms``, ``pools``."""


__all__ = ["TasksAggregate"]
