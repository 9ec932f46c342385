"""The variables every template sees (shell commands and ``env=``, HTTP requests,
built-in sensors' arguments), built from the task context, and their names.

:data:`TEMPLATE_NAMES` is what the parse-time check (:mod:`.template_check`) accepts;
:func:`template_variables` is what a try renders with. Add a name to both (a unit
test holds them equal). ``ti`` / ``task_instance`` give ``ti.xcom_pull(task_ids=...)``.

>>> from datetime import UTC, datetime
>>> when = template_datetime(datetime(2026, 1, 31, 2, tzinfo=UTC))
>>> str(when), str(when + MACROS.timedelta(days=1))
('2026-01-31T02:00:00+00:00', '2026-02-01T02:00:00+00:00')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from orchestrator.authoring.credentials import template_credentials
from orchestrator.authoring.macros import MACROS
from orchestrator.authoring.task_instance_view import TaskInstanceView


class TemplateDatetime(datetime):
    """A datetime whose text is ISO 8601 (``{{ logical_date }}`` renders
    ``2026-01-31T02:00:00+00:00``, as Airflow's pendulum dates do), with every datetime
    method and arithmetic (``logical_date - macros.timedelta(days=1)``,
    ``logical_date.strftime('%Y')``); arithmetic keeps the type."""

    def __str__(self) -> str:
        return self.isoformat()


def template_datetime(value: datetime) -> TemplateDatetime:
    return TemplateDatetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
        tzinfo=value.tzinfo,
        fold=value.fold,
    )


@dataclass(frozen=True)
class DagRunView:
    """``{{ dag_run }}``: the run a try belongs to (``dag_run.conf`` is the conf it was
    triggered with, as given, before the params' defaults are applied)."""

    dag_id: str
    run_id: str
    logical_date: datetime
    data_interval_start: datetime
    data_interval_end: datetime
    conf: dict[str, Any] = field(default_factory=dict)
    run_type: str = "manual"  # issue 26: scheduled, manual, backfill, asset_triggered...


DAG_RUN_ATTRS = frozenset(DagRunView.__dataclass_fields__)

TEMPLATE_NAMES = frozenset(
    {
        "dag_id", "run_id", "task_id", "ds", "ds_nodash", "ts", "ts_nodash",
        "ts_nodash_with_tz", "logical_date", "data_interval_start", "data_interval_end",
        "try_number", "params", "idempotency_key", "var", "conn", "map_index", "macros",
        "dag_run", "ti", "task_instance",
    }
)  # fmt: skip


def template_variables(ctx: Any, timezone: str) -> dict[str, Any]:
    """The variables of a template rendered for the try ``ctx`` (a TaskContext);
    ``ds``/``ts`` are in the DAG's ``timezone``, ``logical_date`` and the data interval
    are datetimes (UTC) whose text is ISO 8601."""
    local = ctx.logical_date.astimezone(ZoneInfo(timezone))
    logical_date = template_datetime(ctx.logical_date)
    start = template_datetime(ctx.data_interval_start)
    end = template_datetime(ctx.data_interval_end)
    ts = local.isoformat()
    ti = TaskInstanceView(ctx)  # {{ ti.xcom_pull(task_ids='x') }}
    return {
        "ti": ti,
        "task_instance": ti,
        "dag_id": ctx.dag_id,
        "run_id": ctx.run_id,
        "task_id": ctx.task_id,
        "ds": local.strftime("%Y-%m-%d"),
        "ds_nodash": local.strftime("%Y%m%d"),
        "ts": ts,
        "ts_nodash": local.strftime("%Y%m%dT%H%M%S"),
        "ts_nodash_with_tz": ts.replace("-", "").replace(":", ""),
        "logical_date": logical_date,
        "data_interval_start": start,
        "data_interval_end": end,
        "try_number": ctx.try_number,
        "params": ctx.params,
        "idempotency_key": ctx.idempotency_key,
        **template_credentials(ctx.credentials),
        "map_index": ctx.map_index,
        "macros": MACROS,
        "dag_run": DagRunView(
            ctx.dag_id,
            ctx.run_id,
            logical_date,
            start,
            end,
            dict(ctx.conf or {}),
            getattr(ctx, "run_type", "manual"),
        ),  # fmt: skip
    }
