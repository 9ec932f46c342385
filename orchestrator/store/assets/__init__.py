"""Assets and their events, the runs they trigger, and cross-DAG reads and triggers."""

from orchestrator.store.assets.asset_store import AssetStore
from orchestrator.store.assets.cross_dag import CrossDagStore


class AssetsAggregate(AssetStore, CrossDagStore):
    """Tables ``asset_events``, ``asset_queue``, ``asset_run_events`` (and ``assets`` rows
    first named by an event)."""


__all__ = ["AssetsAggregate"]
