"""The cluster's processes: the leader lease, registered schedulers and workers, and
the retention of history (``db clean``)."""

from orchestrator.store.cluster.cluster_store import ClusterStore
from orchestrator.store.cluster.leader import LeaderStore
from orchestrator.store.cluster.retention_store import RetentionStore


class ClusterAggregate(LeaderStore, ClusterStore, RetentionStore):
    """Tables ``scheduler_lease``, ``schedulers``, ``workers``; retention deletes across the
    run tables."""


__all__ = ["ClusterAggregate"]
