"""The read side: what pages, grids, metrics, ``/health`` and the explainer read,
named after what they read. Nothing here changes a row, except the explainer's
``retry_dead_letter``."""

from orchestrator.store.reads.dag_pages import DagPagesStore
from orchestrator.store.reads.explain_store import ExplainStore
from orchestrator.store.reads.health import HealthStore
from orchestrator.store.reads.mapped_pages import GroupPagesStore, MappedPagesStore
from orchestrator.store.reads.metrics_facts import MetricsFactsStore
from orchestrator.store.reads.run_calendar import RunCalendarStore
from orchestrator.store.reads.run_pages import RunPagesStore


class ReadsAggregate(
    DagPagesStore,
    RunPagesStore,
    MappedPagesStore,
    GroupPagesStore,
    RunCalendarStore,
    HealthStore,
    MetricsFactsStore,
    ExplainStore,
):
    """Reads across every table; owns none. Methods, like the other aggregates', so a
    caller holds one ``Store``; named so that none shadows another aggregate's."""


__all__ = ["ReadsAggregate"]
