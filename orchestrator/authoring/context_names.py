"""The task context by parameter name, as Airflow passes it (issue 25 item 2).

A task function names what it needs; ``**context`` takes all of it as a dict::

    @task
    def report(ds, ti, dag_run, params, **context):
        ti.log.info("report for %s (run %s, conf %s)", ds, dag_run.run_id, dag_run.conf)

:data:`CONTEXT_NAMES` is what a parameter may be named to get a value;
:func:`context_values` builds the values for one try from its
:class:`~orchestrator.authoring.context.TaskContext`. A positional ``ctx`` keeps
getting the TaskContext itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from orchestrator.authoring.task_instance_view import TaskInstanceView
from orchestrator.authoring.template_context import template_variables

__all__ = ["CONTEXT_NAMES", "TaskInstanceView", "context_values", "current_try"]

# issue 26: the try whose task function runs now, (TaskContext, task), set around the
# call by taskflow.invoke; Airflow's get_current_context() reads it
RUNNING: ContextVar[tuple[Any, Any] | None] = ContextVar("orchestrator_running_try", default=None)

CONTEXT_NAMES = frozenset(
    {
        "ti", "task_instance", "ds", "ds_nodash", "ts", "ts_nodash", "ts_nodash_with_tz",
        "logical_date", "data_interval_start", "data_interval_end", "dag_run", "params",
        "run_id", "dag_id", "task_id", "try_number", "map_index", "outlet_events",
        "triggering_asset_events", "macros", "var", "conn", "dag", "task",
    }
)  # fmt: skip


class _OutletEvent:
    """``outlet_events[asset]``: ``.extra = {...}`` or ``.extra["k"] = v`` adds to the
    event this try records for the asset (ctx.outlet_event)."""

    def __init__(self, ctx: Any, asset: Any) -> None:
        self._ctx, self._asset = ctx, asset

    @property
    def extra(self) -> dict[str, Any]:
        return _Extra(self._ctx, self._asset)

    @extra.setter
    def extra(self, value: dict[str, Any]) -> None:
        self._ctx.outlet_event(self._asset, value)


class _Extra(dict):
    def __init__(self, ctx: Any, asset: Any) -> None:
        uri = getattr(asset, "uri", asset)
        super().__init__(ctx._outlet_extras.get(uri, {}))
        self._ctx, self._asset = ctx, asset

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._ctx.outlet_event(self._asset, {key: value})


class OutletEvents(Mapping):
    """``outlet_events``: ``outlet_events[asset].extra = {...}`` for one of the task's
    outlets (an Asset or its URI)."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def __getitem__(self, asset: Any) -> _OutletEvent:
        return _OutletEvent(self._ctx, asset)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ctx.outlets)

    def __len__(self) -> int:
        return len(self._ctx.outlets)


class TriggeringAssetEvents(Mapping):
    """``triggering_asset_events``: the events that started an asset-triggered run, by
    asset (an Asset or its URI) -> list of events (``.uri``, ``.extra``, ``.at``...)."""

    def __init__(self, events: tuple[Any, ...]) -> None:
        self._by_uri: dict[str, list[Any]] = {}
        for event in events:
            self._by_uri.setdefault(event.uri, []).append(event)

    def __getitem__(self, asset: Any) -> list[Any]:
        return self._by_uri[getattr(asset, "uri", asset)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_uri)

    def __len__(self) -> int:
        return len(self._by_uri)


def context_values(ctx: Any, task: Any = None) -> dict[str, Any]:
    """Every context name's value for the try ``ctx`` (``task``: the live task, whose
    ``dag`` it names)."""
    values = template_variables(ctx, ctx.timezone)
    ti = TaskInstanceView(ctx)
    values.update(
        ti=ti,
        task_instance=ti,
        outlet_events=OutletEvents(ctx),
        triggering_asset_events=TriggeringAssetEvents(ctx.triggering_asset_events),
        task=task,
        dag=getattr(task, "dag", None),
    )
    values.pop("idempotency_key", None)
    return {k: v for k, v in values.items() if k in CONTEXT_NAMES}


def current_try() -> tuple[Any, Any] | None:
    """(TaskContext, task) of the task function running now in this process, or None
    outside one (at parse time, in the scheduler)."""
    return RUNNING.get()


class CallbackContext(dict):
    """What ``on_execute`` / ``on_success`` hooks get: Airflow's context dict
    (``context["ti"]``, ``context["dag_run"]``...) whose attributes are the
    TaskContext's, so a hook written ``def hook(ctx): ctx.log.info(...)`` still works."""

    def __init__(self, ctx: Any, task: Any = None) -> None:
        super().__init__(context_values(ctx, task))
        self._ctx = ctx

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["_ctx"], name)


class CallbackFailure(Exception):
    """``context["exception"]`` of a failure callback: the recorded error (its text; the
    original exception lived in the try's process)."""


class _Named:
    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"<{', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())}>"


def alert_context(payload: dict[str, Any], dag: Any = None, task: Any = None) -> dict[str, Any]:
    """What ``on_failure`` / ``on_retry`` / ``on_missed`` callbacks get: the alert body
    (``kind``, ``message``, ``dag_id``, ``run_id``, ``task_id``, ``try_number``...) with
    Airflow's names beside it: ``ti`` / ``task_instance``, ``dag_run``, ``exception``,
    ``reason``, ``run_id``, ``dag``, ``task``."""
    ti = _Named(
        dag_id=payload.get("dag_id"),
        task_id=payload.get("task_id"),
        run_id=payload.get("run_id"),
        try_number=payload.get("try_number"),
    )
    run = _Named(
        dag_id=payload.get("dag_id"),
        run_id=payload.get("run_id"),
        logical_date=payload.get("logical_date"),
    )
    extra = {
        "ti": ti,
        "task_instance": ti,
        "dag_run": run,
        "exception": CallbackFailure(payload.get("message") or ""),
        "reason": payload.get("message"),
        "dag": dag,
        "task": task,
    }
    return {**payload, **{k: v for k, v in extra.items() if k not in payload}}
