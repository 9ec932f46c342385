"""HTML pages: a run (graph, Gantt, facts) and a task instance (tries, logs, why)."""

from __future__ import annotations

from datetime import timedelta

from flask import Blueprint, render_template

from .. import data, mapped
from ..current import get_layouts, get_log_mask, get_settings, get_store, now
from ..inputs import int_arg

bp = Blueprint("runs", __name__)


@bp.get("/runs/<run_id>")
def run_detail(run_id: str) -> str:
    store = get_store()
    ctx = data.run_page(store, get_layouts(), run_id, now())
    # issue 15: the asset events an asset-triggered run consumed
    consumed = store.asset_events(run_id=run_id) if "__asset_triggered__" in run_id else []
    return render_template("run.html", asset_events=consumed, **ctx)


@bp.get("/runs/<run_id>/tasks/<task_id>")
def task_detail(run_id: str, task_id: str) -> str:
    return _task_page(run_id, task_id, None)


@bp.get("/runs/<run_id>/tasks/<task_id>/map/<int:map_index>")
def task_detail_mapped(run_id: str, task_id: str, map_index: int) -> str:
    """One instance of a mapped task: its tries, logs and why (issue 14)."""
    return _task_page(run_id, task_id, map_index)


@bp.get("/runs/<run_id>/tasks/<task_id>/instances")
def task_instances(run_id: str, task_id: str) -> str:
    """A mapped task's instances, a page at a time, filtered by state (issue 14)."""
    ctx = mapped.instances_page(
        get_store(), run_id, task_id, state=mapped.state_arg(), page=int_arg("page", 1, lo=1) or 1
    )
    timezone = get_store().get_dag(ctx["run"].dag_id).timezone  # times in the DAG's zone
    return render_template("instances.html", timezone=timezone, **ctx)


def _task_page(run_id: str, task_id: str, map_index: int | None) -> str:
    settings = get_settings()
    ctx = data.task_page(
        get_store(),
        run_id,
        task_id,
        now(),
        settings.log_dir,
        timedelta(seconds=settings.lease_seconds),
        map_index,
        mask=get_log_mask(),
    )
    return render_template("task.html", **ctx)
