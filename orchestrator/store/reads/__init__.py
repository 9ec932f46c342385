"""The read side: what pages, grids, metrics and the explainer read, named after what
they read. Nothing here changes a row, except the explainer's ``retry_dead_letter``."""

from orchestrator.store.reads.explain_store import ExplainStore


class ReadsAggregate(ExplainStore):
    """Reads across every table; owns none."""


__all__ = ["ReadsAggregate"]
