"""HTML pages: a run (graph, Gantt, facts) and a task instance (tries, logs, why)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from flask import Blueprint, render_template, request
from werkzeug.wrappers import Response

from orchestrator.errors import NotFoundError

from .. import data, mapped
from ..current import get_layouts, get_log_mask, get_settings, get_store, now
from ..inputs import int_arg
from ..logs import find_try, open_try_log, raw_blocks

bp = Blueprint("runs", __name__)


@bp.get("/runs/<run_id>")
def run_detail(run_id: str) -> str:
    store = get_store()
    ctx = data.run_page(store, get_layouts(), run_id, now(), expand=request.args.get("expand", ""))
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
    store = get_store()
    timezone = store.get_dag(ctx["run"].dag_id).timezone  # times in the DAG's zone
    spec = store.spec(ctx["run"].dag_id, ctx["run"].version_hash)
    group = spec.mapped_group_of(task_id) if task_id in spec.tasks else None
    return render_template("instances.html", timezone=timezone, mapped_group=group, **ctx)


@bp.get("/runs/<run_id>/groups/<group>/instances")
def group_instances(run_id: str, group: str) -> str:
    """A mapped task group's instances: each one's tasks and states (issue 25 item 7)."""
    ctx = mapped.group_page(get_store(), run_id, group, page=int_arg("page", 1, lo=1) or 1)
    return render_template("group_instances.html", **ctx)


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
        each_try=True,
    )
    return render_template("task.html", **ctx)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@bp.get("/runs/<run_id>/tasks/<task_id>/tries/<int:try_number>/log.txt")
def log_raw(run_id: str, task_id: str, try_number: int, map_index: int | None = None) -> Response:
    """A try's whole log as it was written (a download; issue 27)."""
    store = get_store()
    t = find_try(store, run_id, task_id, try_number, map_index)
    opened = open_try_log(store, get_settings().log_dir, t)
    if opened is None:
        raise NotFoundError(f"try {try_number} of task {task_id!r} of {run_id} has no log yet")
    f, size, _ = opened
    mapped_part = f"__{t.map_index}" if t.map_index >= 0 else ""
    name = _UNSAFE.sub("_", f"{run_id}__{task_id}{mapped_part}__try{try_number}") + ".log"
    body: Any = raw_blocks(f, size)
    mask = get_log_mask()
    if mask is not None:  # issue 24: the settings' secrets are hidden here too (whole text)
        with f:
            f.seek(0)
            body = mask(f.read(size).decode("utf-8", "replace")).encode()
        size = len(body)
    return Response(
        body,
        mimetype="text/plain",
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Content-Length": str(size),
            "X-Content-Type-Options": "nosniff",
        },
    )


@bp.get("/runs/<run_id>/tasks/<task_id>/map/<int:map_index>/tries/<int:try_number>/log.txt")
def log_raw_mapped(run_id: str, task_id: str, map_index: int, try_number: int) -> Response:
    """A try's whole log of one instance of a mapped task."""
    return log_raw(run_id, task_id, try_number, map_index)
