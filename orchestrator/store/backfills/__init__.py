"""Backfills: the runs of a date range, created idempotently, rerun and cancelled."""

from orchestrator.store.backfills.backfill_store import BackfillStore


class BackfillsAggregate(BackfillStore):
    """Table ``backfills`` (its runs are ``dag_runs`` rows)."""


__all__ = ["BackfillsAggregate"]
