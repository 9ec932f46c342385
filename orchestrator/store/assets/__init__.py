"""Assets and their events, the runs they trigger, and cross-DAG reads and triggers."""

from orchestrator.store.assets.asset_store import AssetStore
from orchestrator.store.assets.cross_dag import CrossDagStore


class AssetsAggregate(AssetStore, CrossDagStore):
    """Tables ``assets``, ``asset_refs``, ``asset_events``, ``asset_queue``,
    ``asset_run_events``."""


__all__ = ["AssetsAggregate"]
