"""Airflow's operator arguments over our task options, and the arguments refused.

Every operator of :mod:`orchestrator.airflow` takes Airflow's ``BaseOperator``
arguments (``task_id``, ``retries``, ``retry_delay``, ``execution_timeout``,
``trigger_rule``, ``pool``, ``on_failure_callback``, ``doc_md``...); :func:`task_options`
turns them into :class:`~orchestrator.authoring.task_node.Task` options. An argument we
do not support is a :class:`~orchestrator.errors.DagDefinitionError` naming the DAG
file's line, the argument and what to write instead, never silently dropped::

    >>> task_options("BashOperator", {"task_id": "t", "sla": 60}, ("etl.py", 9))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    orchestrator.errors.DagDefinitionError: etl.py:9: BashOperator 't': sla= is not supported ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from orchestrator.authoring.alerts import TASK_DEAD_LETTERED, email
from orchestrator.authoring.dag_vocabulary import AIRFLOW_TASK_ARGS
from orchestrator.authoring.where import Where
from orchestrator.authoring.where import definition_error as fail

# every operator's arguments (BaseOperator's) that have a meaning here
COMMON = frozenset(AIRFLOW_TASK_ARGS) | {
    "task_id",
    "dag",
    "doc",
    "doc_md",
    "email",
    "email_on_failure",
    "email_on_retry",
    "outlets",
    "do_xcom_push",
    "run_as_user",
    "multiple_outputs",
    "map_index_template",  # issue 25 item 7: a mapped instance's name
}

# Airflow arguments refused, each with why and what to write instead
UNSUPPORTED = {
    "sla": "SLAs are gone in Airflow 3; give the DAG deadline=timedelta(...) (an alert)",
    "start_date": "a task's own start_date is not supported; the DAG's start_date applies",
    "end_date": "a task's own end_date is not supported; the DAG's end_date applies",
    "wait_for_downstream": "use depends_on_past=True (waits for the task's previous run)",
    "weight_rule": "priority_weight is the task's own weight here; drop weight_rule",
    "executor": "there is one executor (the workers); use queue= to pick workers",
    "executor_config": "there is one executor (the workers); use queue= to pick workers",
    "resources": "use pool= and pool_slots= to bound what runs at once",
    "max_active_tis_per_dagrun": "use max_active_tis_per_dag= or a pool",
    "params": "give params to the DAG (DAG(params={...})); tasks read them as params",
    "default_args": "give default_args to the DAG",
    "task_group": "create the task inside 'with TaskGroup(...):'",
    "inlets": "lineage is not recorded; name what a task reads in its code",
    "on_skipped_callback": "use on_success_callback / on_failure_callback",
    "task_display_name": "the task id is what is shown",
    "doc_rst": "use doc_md= (Markdown)",
    "doc_json": "use doc_md= (Markdown)",
    "doc_yaml": "use doc_md= (Markdown)",
    "allow_nested_operators": "operators are declared in the DAG file, not run in others",
    "logger_name": "a try's log is its own file; use the task's logger (ti.log)",
}


class _Callbacks:
    """Airflow's list of callbacks as one callable (called in order)."""

    def __init__(self, fns: list[Callable[..., Any]]) -> None:
        self.fns = fns

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        for fn in self.fns:
            fn(*args, **kwargs)


def refuse(kind: str, task_id: Any, name: str, why: str, where: Where) -> Exception:
    """The import error for argument ``name`` of ``kind`` (a class or decorator name)."""
    return fail(f"{kind} {task_id!r}: {name}= is not supported here: {why}", where)


def check_known(
    kind: str, task_id: Any, given: Iterable[str], known: Iterable[str], where: Where
) -> None:
    """Refuse the first argument of ``given`` neither common nor in ``known``."""
    own = set(known)
    for name in given:
        if name in COMMON or name in own:
            continue
        if name in UNSUPPORTED:
            raise refuse(kind, task_id, name, UNSUPPORTED[name], where)
        accepted = ", ".join(sorted(own | COMMON))
        raise fail(f"{kind} {task_id!r}: unknown argument {name}= (it takes: {accepted})", where)


def task_options(kind: str, given: dict[str, Any], where: Where) -> dict[str, Any]:
    """Airflow's common operator arguments in ``given`` as our task options (the DAG's
    default_args are added by the caller); ``task_id`` and ``dag`` are left out."""
    task_id = given.get("task_id")
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name in ("task_id", "dag", "email", "email_on_failure", "email_on_retry"):
            continue
        if name in UNSUPPORTED:
            raise refuse(kind, task_id, name, UNSUPPORTED[name], where)
        if name in ("doc", "doc_md"):
            if value is not None and not isinstance(value, str):
                raise fail(f"{kind} {task_id!r}: {name} must be a string (Markdown)", where)
            out["doc_md"] = value  # shown as Markdown on the task's page
        elif name == "do_xcom_push":
            if not isinstance(value, bool):
                raise fail(f"{kind} {task_id!r}: do_xcom_push must be True or False", where)
        elif name.endswith("_callback") and isinstance(value, list | tuple):
            out[AIRFLOW_TASK_ARGS.get(name, name)] = _Callbacks(list(value))
        else:
            out[AIRFLOW_TASK_ARGS.get(name, name)] = value
    to = given.get("email")
    if to and given.get("email_on_failure", True):
        if not (isinstance(to, str) or all(isinstance(a, str) for a in to)):
            raise fail(f"{kind} {task_id!r}: email must be an address or a list of them", where)
        out["alerts"] = [email(to, events=[TASK_DEAD_LETTERED])]
    return out


def check_task_id(kind: str, given: dict[str, Any], where: Where) -> str:
    """The ``task_id`` every operator needs."""
    task_id = given.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise fail(f"{kind}: task_id= is required (a string), got {task_id!r}", where)
    return task_id
