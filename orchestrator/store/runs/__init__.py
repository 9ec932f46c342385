"""DAG runs: inserting them (with their task instances), starting, finishing and
cancelling them, and ``dagrun_timeout``."""

from orchestrator.store.runs.due_runs import DueRunStore
from orchestrator.store.runs.run_store import RunStore
from orchestrator.store.runs.run_timeout import RunTimeoutStore


class RunsAggregate(DueRunStore, RunStore, RunTimeoutStore):
    """Table ``dag_runs`` (and the first rows of ``task_instances``, inserted with a run)."""


__all__ = ["RunsAggregate"]
