"""The store: the only code that reads and writes the metadata database.

Its methods are named after transitions (``create_scheduled_runs``, ``release_ready``,
``claim``, ``heartbeat``, ``finish_success``, ``reap_expired``...); each is a
compare-and-set whose row count is checked. Records, not rows, leave it.

>>> store = Store("sqlite:///state/orchestrator.db")   # doctest: +SKIP
>>> store.list_dags()                                   # doctest: +SKIP
"""

from orchestrator.store.dag_store import DagStore
from orchestrator.store.events import EventStore
from orchestrator.store.leader import LeaderStore
from orchestrator.store.run_store import RunStore
from orchestrator.store.task_store import TaskStore


class Store(DagStore, RunStore, TaskStore, LeaderStore, EventStore):
    pass


__all__ = ["Store"]
