"""``airflow.sdk``'s names over our own: ``DAG``, ``dag``, ``task_group``, ``TaskGroup``,
``Asset``, ``Label``, ``chain``, ``cross_downstream``, ``get_current_context`` and
``TriggerRule`` (``task`` and its kinds are in :mod:`orchestrator.airflow.decorators`)::

    from datetime import datetime
    from orchestrator.airflow import DAG, Label, chain, get_current_context, task

    with DAG("tutorial", schedule="@daily", start_date=datetime(2026, 1, 1),
             catchup=False, on_failure_callback=page_someone) as dag:
        @task
        def extract():
            return {"day": get_current_context()["ds"]}
        ...

Each is a thin adapter: Airflow's arguments become our DAG, task-group and asset
options; an argument we do not support is a DagDefinitionError naming the file:line,
the argument and what to write instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from orchestrator.authoring import dag as _dag_module
from orchestrator.authoring.assets import Asset as _Asset
from orchestrator.authoring.context_names import context_values, current_try
from orchestrator.authoring.dag_vocabulary import dag_decorator
from orchestrator.authoring.task_group import TaskGroup as _TaskGroup
from orchestrator.authoring.task_group import task_group as _task_group
from orchestrator.authoring.where import caller, definition_error
from orchestrator.scheduling.trigger_rules import TriggerRule

__all__ = [
    "DAG",
    "Asset",
    "Label",
    "TaskGroup",
    "TriggerRule",
    "chain",
    "cross_downstream",
    "dag",
    "get_current_context",
    "task_group",
]

# Airflow's DAG argument -> ours
DAG_ARGS = {
    "on_failure_callback": "on_failure",
    "on_success_callback": "on_success",
    "is_paused_upon_creation": "paused",
}
# Airflow DAG arguments refused, with why and what to write instead
DAG_UNSUPPORTED = {
    "schedule_interval": "Airflow 3 removed it: write schedule=",
    "timetable": "Airflow 3 removed it: write schedule= (cron, preset, timedelta or assets)",
    "concurrency": "Airflow 3 removed it: write max_active_tasks=",
    "sla_miss_callback": "SLAs are gone in Airflow 3; give the DAG deadline= and on_missed=",
    "access_control": "access is by role for every DAG (orchestrator users ... --role)",
    "max_consecutive_failed_dag_runs": "not supported; alert on failures with on_failure_callback",
    "jinja_environment_kwargs": "templates use one sandboxed, strict Jinja2 environment",
    "owner_links": "owners are shown from each task's owner (default_args)",
    "default_view": "the UI opens a DAG on its grid",
    "orientation": "the graph is laid out left to right",
    "fail_fast": "not supported; a failed task's downstream are upstream_failed",
    "dag_display_name": "the dag_id is what is shown",
    "auto_register": "every DAG a file builds is registered",
    "template_undefined": "an unknown name in a template is an import error already",
}


def _ds(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%d")


def _ds_nodash(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y%m%d")


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _ts_nodash(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y%m%dT%H%M%S")


def _ts_nodash_with_tz(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("-", "").replace(":", "")


# the filters every Airflow template has (airflow/templates.py): {{ data_interval_end | ds }}
AIRFLOW_FILTERS: dict[str, Callable[[Any], Any]] = {
    "ds": _ds,
    "ds_nodash": _ds_nodash,
    "ts": _ts,
    "ts_nodash": _ts_nodash,
    "ts_nodash_with_tz": _ts_nodash_with_tz,
}


def _translate_dag_options(dag_id: Any, options: dict[str, Any], where: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in options.items():
        if name in DAG_UNSUPPORTED:
            raise definition_error(
                f"DAG {dag_id!r}: {name}= is not supported here: {DAG_UNSUPPORTED[name]}", where
            )
        out[DAG_ARGS.get(name, name)] = value
    out["user_defined_filters"] = {**AIRFLOW_FILTERS, **(out.get("user_defined_filters") or {})}
    start = out.get("start_date")
    if start is None:
        start = (out.get("default_args") or {}).get("start_date")
    if "timezone" not in out and isinstance(start, datetime) and start.tzinfo is not None:
        zone = getattr(start.tzinfo, "key", None) or getattr(start.tzinfo, "name", None)
        if isinstance(zone, str) and zone:
            out["timezone"] = zone  # Airflow's DAG timezone is its start_date's
    return out


class DAG(_dag_module.DAG):
    """Airflow's ``DAG``: ``DAG(dag_id, schedule=..., start_date=..., catchup=...,
    default_args=..., on_failure_callback=...)`` as our :class:`orchestrator.DAG`.

    >>> with DAG("tutorial", schedule=None) as d:     # doctest: +SKIP
    ...     pass

    The DAG's timezone is its ``start_date``'s (an aware one), UTC otherwise.
    """

    def __init__(self, dag_id: str, description: str | None = None, **options: Any) -> None:
        options = _translate_dag_options(dag_id, options, caller())
        super().__init__(dag_id, description=description, **options)


def dag(dag_id: Any = None, **options: Any) -> Any:
    """Airflow's ``@dag(...)``: the function's name is the dag_id, its parameters the
    params; call it at the bottom of the file (``tutorial()``)."""
    if callable(dag_id):
        return dag_decorator(DAG, None, options)(dag_id)
    return dag_decorator(DAG, dag_id, options)


# -- task groups ------------------------------------------------------------------------
GROUP_UNSUPPORTED = {
    "prefix_group_id": "a task's id in a group is always 'group.task'",
    "default_args": "give default_args to the DAG",
    "parent_group": "nest 'with TaskGroup(...)' blocks",
    "add_suffix_on_collision": "give each group its own group_id",
    "ui_color": "groups are drawn in one colour",
    "ui_fgcolor": "groups are drawn in one colour",
}


def _check_group_options(group_id: Any, options: dict[str, Any], where: Any) -> None:
    for name, value in options.items():
        if name in ("ui_color", "ui_fgcolor") or (name == "prefix_group_id" and value is True):
            continue  # cosmetic, or Airflow's default (ours too)
        why = GROUP_UNSUPPORTED.get(name, "it is not a task group argument (group_id, tooltip)")
        raise definition_error(
            f"task group {group_id!r}: {name}= is not supported here: {why}", where
        )


class TaskGroup(_TaskGroup):
    """Airflow's ``TaskGroup(group_id, tooltip=..., dag=...)``; tasks made inside
    ``with TaskGroup("g"):`` get ids ``g.<task_id>``.

    >>> with TaskGroup("clean", tooltip="cleaning") as clean:   # doctest: +SKIP
    ...     ...
    """

    def __init__(
        self, group_id: str, tooltip: str = "", *, dag: Any = None, **options: Any
    ) -> None:
        _check_group_options(group_id, options, caller())
        super().__init__(group_id, dag=dag, tooltip=tooltip)


def task_group(
    python_callable: Callable[..., Any] | None = None, *, group_id: str | None = None,
    tooltip: str = "", **options: Any,
) -> Any:  # fmt: skip
    """Airflow's ``@task_group``: calling the function builds its tasks in a group;
    ``.expand(...)``/``.partial(...)``/``.expand_kwargs(...)`` map it (issue 25 item 7)."""
    where = caller()
    _check_group_options(group_id, options, where)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        return _task_group(fn, group_id=group_id, tooltip=tooltip)

    return decorate(python_callable) if python_callable is not None else decorate


# -- assets --------------------------------------------------------------------------
class Asset(_Asset):
    """Airflow 3's ``Asset(name, uri=None, group=...)``: ``Asset("s3://b/k")``,
    ``Asset(name="orders", uri="s3://b/orders")``. A name without ``://`` and no uri
    gets the URI ``asset://<name>`` (ours need a scheme; Airflow's URI is the name).

    >>> Asset("orders").uri                       # doctest: +SKIP
    'asset://orders'
    """

    def __init__(
        self,
        name: str | None = None,
        uri: str | None = None,
        *,
        group: str | None = None,
        extra: dict[str, Any] | None = None,
        watchers: list[Any] | None = None,
    ) -> None:
        if extra:
            raise definition_error(
                f"Asset {name or uri!r}: extra= is not supported here: assets carry no "
                "metadata of their own; give each event its extra (outlet_events[asset].extra)"
            )
        if uri is None and isinstance(name, str):
            uri = name if "://" in name else f"asset://{name}"
        group = None if group == "asset" else group  # Airflow's default group
        super().__init__(uri, name=name, group=group, watchers=watchers)  # type: ignore[arg-type]


# -- wiring --------------------------------------------------------------------------
class Label:
    """Airflow's edge label: ``a >> Label("when empty") >> b`` wires ``a >> b``. The
    label itself is not stored or drawn here.

    >>> check >> Label("no rows") >> notify  # doctest: +SKIP
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self._before: list[Any] = []

    def wire_after(self, upstream: Any) -> Label:  # a >> Label(...)
        self._before.append(upstream)
        return self

    def wire_before(self, downstream: Any) -> Label:  # b << Label(...)
        self._before.append(("<<", downstream))
        return self

    def __rrshift__(self, upstream: Any) -> Label:  # [a, b] >> Label(...)
        return self.wire_after(upstream)

    def __rshift__(self, downstream: Any) -> Any:
        for up in self._before:
            if isinstance(up, list):
                for one in up:
                    one >> downstream
            else:
                up >> downstream
        return downstream

    def __lshift__(self, upstream: Any) -> Any:  # b << Label(...) << a
        for item in self._before:
            down = item[1] if isinstance(item, tuple) else item
            down << upstream
        return upstream

    def __repr__(self) -> str:
        return f"Label({self.label!r})"


def chain(*elements: Any) -> None:
    """Airflow's ``chain(a, [b, c], d)``: each element downstream of the one before; two
    lists next to each other are wired pairwise and must have the same length."""
    for up, down in zip(elements, elements[1:], strict=False):
        ups = isinstance(up, list | tuple)
        downs = isinstance(down, list | tuple)
        if ups and downs:
            if len(up) != len(down):
                raise definition_error(
                    f"chain(): two lists next to each other are wired pairwise and need the "
                    f"same length, got {len(up)} and {len(down)}"
                )
            for a, b in zip(up, down, strict=True):
                a >> b
        else:
            up >> down


def cross_downstream(from_tasks: Sequence[Any], to_tasks: Sequence[Any]) -> None:
    """Airflow's ``cross_downstream([a, b], [c, d])``: every one of ``to_tasks``
    downstream of every one of ``from_tasks``."""
    for up in from_tasks:
        up >> list(to_tasks)


def get_current_context() -> dict[str, Any]:
    """Airflow's ``get_current_context()``: the running try's context dict (``ti``,
    ``ds``, ``params``, ``dag_run``, ``logical_date``...), inside a task's function.
    Anywhere else (at parse time) it is an error, as in Airflow."""
    running = current_try()
    if running is None:
        raise RuntimeError(
            "get_current_context() is called outside a running task: call it inside a "
            "task's function"
        )
    ctx, task = running
    return context_values(ctx, task)
