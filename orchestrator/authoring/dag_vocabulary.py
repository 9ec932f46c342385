"""Airflow's DAG vocabulary over our options (issue 25 item 4): ``default_args``,
``catchup`` and the ``@dag`` decorator.

What a DAG file ported from Airflow writes::

    from datetime import datetime, timedelta
    from orchestrator import dag, task

    @dag(schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False,
         default_args={"owner": "data", "retries": 2, "retry_delay": timedelta(minutes=5)},
         tags=["etl"], doc_md="Loads the **orders**.")
    def orders(limit=100):              # dag_id "orders"; params {"limit": 100}
        @task
        def load(limit):
            ...
        load(limit)                     # the param's value at run time

    orders()

Every mistake is a :class:`DagDefinitionError` naming the file and line.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from orchestrator.authoring.alerts import TASK_DEAD_LETTERED, email
from orchestrator.authoring.params import Param
from orchestrator.authoring.where import Where
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.authoring.xcom_arg import ParamRef

# Airflow's task argument -> our task option
AIRFLOW_TASK_ARGS = {
    "retries": "retries",
    "retry_delay": "retry_delay",
    "retry_exponential_backoff": "retry_exponential",
    "max_retry_delay": "max_retry_delay",
    "execution_timeout": "timeout",
    "on_failure_callback": "on_failure",
    "on_success_callback": "on_success",
    "on_retry_callback": "on_retry",
    "on_execute_callback": "on_execute",
    "owner": "owner",
    "pool": "pool",
    "pool_slots": "pool_slots",
    "queue": "queue",
    "priority_weight": "priority_weight",
    "trigger_rule": "trigger_rule",
    "depends_on_past": "depends_on_past",
    "max_active_tis_per_dag": "max_active_tis_per_dag",
}
# our own names are welcome too
OWN_TASK_OPTIONS = frozenset(AIRFLOW_TASK_ARGS.values()) | {"max_lost_tries", "alerts"}
DAG_FALLBACKS = ("start_date", "end_date")  # default_args' dates are the DAG's
EMAIL_ARGS = ("email", "email_on_failure", "email_on_retry")


def split_default_args(
    default_args: Any, dag_id: str, where: Where
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``default_args`` as (task options applied to every task, DAG fallbacks)."""
    if default_args is None:
        return {}, {}
    if not isinstance(default_args, dict) or not all(isinstance(k, str) for k in default_args):
        raise _fail(f"DAG {dag_id!r}: default_args must be a dict of names, got {default_args!r}")
    tasks: dict[str, Any] = {}
    dag: dict[str, Any] = {}
    for name, value in default_args.items():
        if name in AIRFLOW_TASK_ARGS:
            tasks[AIRFLOW_TASK_ARGS[name]] = value
        elif name in OWN_TASK_OPTIONS:
            tasks[name] = value
        elif name in DAG_FALLBACKS:
            dag[name] = value
        elif name not in EMAIL_ARGS:
            known = sorted({*AIRFLOW_TASK_ARGS, *OWN_TASK_OPTIONS, *DAG_FALLBACKS, *EMAIL_ARGS})
            raise _fail(
                f"DAG {dag_id!r}: default_args has {name!r}, which is not a task option here "
                f"(one of: {', '.join(known)})",
                where,
            )
    to = default_args.get("email")
    if to and default_args.get("email_on_failure", True):
        if not (isinstance(to, str) or all(isinstance(a, str) for a in to)):
            raise _fail(f"DAG {dag_id!r}: default_args email must be an address or a list", where)
        mail = email(to, events=[TASK_DEAD_LETTERED])
        tasks["alerts"] = [*tasks.get("alerts", ()), mail]
    return tasks, dag


def own_names(options: dict[str, Any], task_id: Any, where: Where) -> dict[str, Any]:
    """A task's options with Airflow's names (``execution_timeout``,
    ``on_failure_callback``...) turned into ours; both spellings at once is an error."""
    out = dict(options)
    for airflow, ours in AIRFLOW_TASK_ARGS.items():
        if airflow != ours and airflow in out:
            if ours in out:
                raise _fail(
                    f"task {task_id!r}: {airflow}= and {ours}= say the same: keep one", where
                )
            out[ours] = out.pop(airflow)
    return out


def misfire_of(catchup: Any, misfire: str | None, dag_id: str, where: Where) -> str:
    """``catchup=True`` is ``misfire="backfill"`` (a run for every missed fire time),
    ``catchup=False`` is ``misfire="coalesce"`` (one run, for the latest)."""
    if catchup is None:
        return misfire or "coalesce"
    if not isinstance(catchup, bool):
        raise _fail(f"DAG {dag_id!r}: catchup must be True or False, got {catchup!r}", where)
    policy = "backfill" if catchup else "coalesce"
    if misfire is not None and misfire != policy:
        raise _fail(
            f"DAG {dag_id!r}: catchup={catchup} is misfire={policy!r}, but misfire={misfire!r} "
            "is given too: keep one of them",
            where,
        )
    return policy


def dag_decorator(dag_class: type, dag_id: Any, options: dict[str, Any]) -> Any:
    """``@dag(...)`` (see :func:`orchestrator.authoring.dag.dag`): ``dag_class`` is the
    DAG class, passed in because ``dag.py`` imports this module."""
    if callable(dag_id):  # bare @dag
        return dag_decorator(dag_class, None, options)(dag_id)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn)
        names = [
            p
            for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

        @functools.wraps(fn)
        def build(*args: Any, **kwargs: Any) -> Any:
            params = dict(options.get("params") or {})
            try:
                bound = signature.bind_partial(*args, **kwargs)
            except TypeError as exc:
                raise _fail(f"@dag {fn.__name__}(): {exc}") from None
            for p in names:
                if p.name in bound.arguments:
                    params[p.name] = bound.arguments[p.name]
                elif p.name not in params:
                    params[p.name] = Param() if p.default is p.empty else p.default
            rest = {k: v for k, v in options.items() if k != "params"}
            with dag_class(dag_id or fn.__name__, params=params, **rest) as made:
                fn(**{p.name: ParamRef(p.name) for p in names})
            return made

        return build

    return decorate
