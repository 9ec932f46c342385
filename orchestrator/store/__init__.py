"""The store: the only code that reads and writes the metadata database.

Its methods are named after transitions (``create_scheduled_runs``, ``release_ready``,
``claim``, ``heartbeat``, ``finish_success``, ``reap_expired``...); each is a
compare-and-set whose row count is checked. Records, not rows, leave it.

The code is laid out by aggregate, each a subpackage over ``core/`` that imports only
the aggregates below it (``tests/unit/test_layers.py``); ``Store`` is the one object
callers hold, its methods coming from one class per aggregate. docs/architecture.md
says which aggregate owns which table and which transitions cross aggregates.

>>> store = Store("sqlite:///state/orchestrator.db")   # doctest: +SKIP
>>> store.list_dags()                                   # doctest: +SKIP
"""

from orchestrator.store.access import AccessAggregate
from orchestrator.store.assets import AssetsAggregate
from orchestrator.store.backfills import BackfillsAggregate
from orchestrator.store.cluster import ClusterAggregate
from orchestrator.store.credentials import CredentialsAggregate
from orchestrator.store.dags import DagsAggregate
from orchestrator.store.observe import ObserveAggregate
from orchestrator.store.reads import ReadsAggregate
from orchestrator.store.runs import RunsAggregate
from orchestrator.store.tasks import TasksAggregate
from orchestrator.store.triggers import TriggersAggregate


class Store(
    TriggersAggregate,
    TasksAggregate,
    RunsAggregate,
    BackfillsAggregate,
    DagsAggregate,
    AssetsAggregate,
    CredentialsAggregate,
    AccessAggregate,
    ClusterAggregate,
    ObserveAggregate,
    ReadsAggregate,
):
    """All the transitions and reads: one base per aggregate (``store/<aggregate>/``)."""


__all__ = ["Store"]
