"""HTML pages: a run (graph, Gantt, facts) and a task instance (tries, logs, why)."""

from __future__ import annotations

from datetime import timedelta

from flask import Blueprint, render_template

from .. import data
from ..current import get_layouts, get_settings, get_store, now

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
    settings = get_settings()
    ctx = data.task_page(
        get_store(),
        run_id,
        task_id,
        now(),
        settings.log_dir,
        timedelta(seconds=settings.lease_seconds),
    )
    return render_template("task.html", **ctx)
