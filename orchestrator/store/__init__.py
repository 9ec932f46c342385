"""The store: the only code that reads and writes the metadata database.

Its methods are named after transitions (``create_scheduled_runs``, ``release_ready``,
``claim``, ``heartbeat``, ``finish_success``, ``reap_expired``...); each is a
compare-and-set whose row count is checked. Records, not rows, leave it.

>>> store = Store("sqlite:///state/orchestrator.db")   # doctest: +SKIP
>>> store.list_dags()                                   # doctest: +SKIP
"""

from orchestrator.store.alert_store import AlertStore
from orchestrator.store.asset_store import AssetStore
from orchestrator.store.backfill_store import BackfillStore
from orchestrator.store.claims import ClaimStore
from orchestrator.store.cluster_store import ClusterStore
from orchestrator.store.connection_store import ConnectionStore
from orchestrator.store.cross_dag import CrossDagStore
from orchestrator.store.dag_store import DagStore
from orchestrator.store.events import EventStore
from orchestrator.store.explain_store import ExplainStore
from orchestrator.store.finish import FinishStore
from orchestrator.store.handback import HandbackStore
from orchestrator.store.leader import LeaderStore
from orchestrator.store.log_store import LogStore
from orchestrator.store.release import ReleaseStore
from orchestrator.store.retention_store import RetentionStore
from orchestrator.store.run_store import RunStore
from orchestrator.store.run_timeout import RunTimeoutStore
from orchestrator.store.sensor_store import SensorStore
from orchestrator.store.task_outcomes import TaskOutcomeStore
from orchestrator.store.task_store import TaskStore
from orchestrator.store.token_store import TokenStore
from orchestrator.store.ui_actions import UiActionStore
from orchestrator.store.user_store import UserStore
from orchestrator.store.variable_store import VariableStore
from orchestrator.store.version_store import VersionStore


class Store(
    ClaimStore,
    BackfillStore,
    DagStore,
    RunStore,
    TaskStore,
    FinishStore,
    ReleaseStore,
    LeaderStore,
    EventStore,
    UiActionStore,
    UserStore,
    ClusterStore,
    HandbackStore,
    ExplainStore,
    AlertStore,
    RetentionStore,  # observability (issue 6)
    LogStore,  # try logs shipped to the store (issue 17)
    VersionStore,  # a DAG's stored versions (issue 17)
    VariableStore,  # issue 16: variables
    ConnectionStore,  # issue 16: connections
    AssetStore,  # assets and asset events (issue 15)
    TaskOutcomeStore,  # Skip / Fail (issue 14)
    RunTimeoutStore,  # dagrun_timeout (issue 14)
    TokenStore,  # API tokens (issue 17)
    SensorStore,  # sensors (issue 15)
    CrossDagStore,  # external sensors, triggering a DAG (issue 15)
):
    """All the transitions and reads, one mixin per concept (one base per line)."""


__all__ = ["Store"]
