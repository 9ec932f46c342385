"""DAGs as parsed: their rows, stored versions and sources, the assets each version
names, and import errors."""

from orchestrator.store.dags.dag_store import DagStore
from orchestrator.store.dags.version_store import VersionStore


class DagsAggregate(DagStore, VersionStore):
    """Tables ``dags``, ``dag_versions``, ``dag_sources``, ``import_errors``, ``asset_refs``
    (and the ``assets`` rows a version names)."""


__all__ = ["DagsAggregate"]
