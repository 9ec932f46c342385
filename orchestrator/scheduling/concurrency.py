"""Whether a ready task instance may be claimed now: ``depends_on_past``,
``max_active_tasks`` (per DAG) and ``max_active_tis_per_dag`` (per task), Airflow's
names (issue 14). Pure code over facts the store gathers (store/tasks/concurrency.py); the
claim and the explainer (``tasks why``, the UI) ask the same function, so what the
explainer says is what the claim does.

>>> blocked_by(GateFacts(max_active_tasks=2, dag_running=2))[0][0]
'max_active_tasks'
>>> blocked_by(GateFacts(depends_on_past=True, past_run_id=None))
[]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.states import TaskState

DEPENDS_ON_PAST = "depends_on_past"
MAX_ACTIVE_TASKS = "max_active_tasks"
MAX_ACTIVE_TIS = "max_active_tis_per_dag"
PAST_OK = frozenset({TaskState.SUCCESS, TaskState.SKIPPED})


@dataclass(frozen=True)
class GateFacts:
    """What decides one instance's claim: the limits and what is running now, and the
    same task in the DAG's previous run by logical date (None: no previous run, or the
    task did not exist in it: nothing to wait for, as in Airflow)."""

    task_id: str = ""
    max_active_tasks: int | None = None
    dag_running: int = 0  # running instances of the DAG, across its runs
    max_active_tis_per_dag: int | None = None
    task_running: int = 0  # running instances of this task, across the DAG's runs
    depends_on_past: bool = False
    past_run_id: str | None = None
    past_state: str | None = None


def blocked_by(g: GateFacts) -> list[tuple[str, str, dict[str, Any]]]:
    """(code, message, facts) for each condition that keeps the instance unclaimed."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    if g.depends_on_past and g.past_run_id is not None and g.past_state not in PAST_OK:
        out.append(
            (
                DEPENDS_ON_PAST,
                f"depends_on_past: waiting for {g.task_id or 'this task'} in the previous "
                f"run {g.past_run_id} (now {g.past_state}) to succeed or be skipped",
                {"past_run_id": g.past_run_id, "past_state": g.past_state},
            )
        )
    if g.max_active_tasks is not None and g.dag_running >= g.max_active_tasks:
        out.append(
            (
                MAX_ACTIVE_TASKS,
                f"max_active_tasks: the DAG has {g.dag_running} task instance(s) running, "
                f"its limit is {g.max_active_tasks}",
                {"running": g.dag_running, "limit": g.max_active_tasks},
            )
        )
    if g.max_active_tis_per_dag is not None and g.task_running >= g.max_active_tis_per_dag:
        out.append(
            (
                MAX_ACTIVE_TIS,
                f"max_active_tis_per_dag: {g.task_running} instance(s) of this task are "
                f"running across the DAG's runs, its limit is {g.max_active_tis_per_dag}",
                {"running": g.task_running, "limit": g.max_active_tis_per_dag},
            )
        )
    return out
