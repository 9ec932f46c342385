"""DAGs as parsed: their rows, stored versions and sources, and import errors."""

from orchestrator.store.dags.dag_store import DagStore
from orchestrator.store.dags.version_store import VersionStore


class DagsAggregate(DagStore, VersionStore):
    """Tables ``dags``, ``dag_versions``, ``dag_sources``, ``import_errors``."""


__all__ = ["DagsAggregate"]
