"""HTML pages: a run (graph, Gantt, facts) and a task instance (tries, logs, why)."""

from __future__ import annotations

from datetime import timedelta

from flask import Blueprint, render_template

from .. import data
from ..current import get_layouts, get_settings, get_store, now

bp = Blueprint("runs", __name__)


@bp.get("/runs/<run_id>")
def run_detail(run_id: str) -> str:
    return render_template("run.html", **data.run_page(get_store(), get_layouts(), run_id, now()))


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
