"""The JSON API (``/api/v1``), read side: the same data as the pages."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta
from typing import Any

from flask import Blueprint, current_app, jsonify, request
from werkzeug.wrappers import Response

from orchestrator.errors import ConfigError
from orchestrator.store.core.records import DagRecord

from .. import dag_list as listing
from .. import data, mapped
from ..current import get_log_mask, get_settings, get_store, now
from ..formatting import iso
from ..grid_view import GridQuery, read_run_filters
from ..inputs import choice_arg, int_arg, text_arg
from ..log_view import MAX_QUERY, render_lines
from ..logs import find_try, read_try_log, search_try_log, view_try_log
from .events import filters
from .openapi import document, endpoints_of

bp = Blueprint("api", __name__, url_prefix="/api/v1")

MAX_LIMIT = 500


def dag_json(dag: DagRecord, words: str | None = None) -> dict[str, Any]:
    out = {
        "dag_id": dag.dag_id,
        "is_paused": dag.is_paused,
        "is_active": dag.is_active,
        "schedule": dag.schedule,
        "timezone": dag.timezone,
        "next_logical_date": iso(dag.next_logical_date),
        "description": dag.description,
        "tags": list(dag.tags),
        "owners": list(dag.owners),  # issue 27
        "fileloc": dag.fileloc,
    }
    if words is not None:
        out["schedule_words"] = words
    return out


def _limit(default: int = 50) -> int:
    return min(max(int_arg("limit", default) or default, 1), MAX_LIMIT)


@bp.get("/openapi.json")
def openapi() -> Response:
    return jsonify(document(endpoints_of(current_app.url_map)))


@bp.get("/dags")
def dags() -> Response:
    query = listing.read_query()
    if not request.args.get("page") and not request.args.get("per_page"):
        query = listing.replace(query, per_page=listing.MAX_INT)  # unpaged, as before issue 27
    ctx = listing.dag_list(get_store(), query)
    items = [
        dag_json(row["dag"], row["words"]) | {"recent_runs": [m.to_dict() for m in row["marks"]]}
        for row in ctx["dags"]
    ]
    return jsonify({"dags": items, "total_entries": ctx["total"], "tags": ctx["tags"]})


@bp.get("/dags/<dag_id>")
def dag(dag_id: str) -> Response:
    store = get_store()
    record = store.get_dag(dag_id)
    spec = store.spec(dag_id, record.version_hash)
    body = dag_json(record, data.words(spec)) | {
        "params": spec.params,
        # issue 25: each param's JSON Schema (a plain param's: its default's type)
        "param_schemas": {name: spec.param_schema(name) for name in spec.params},
        "required_params": list(spec.required_params),
        "max_active_runs": spec.max_active_runs,
        "tasks": [
            # group: the task group path, or null (issue 14)
            {"task_id": t.task_id, "kind": t.kind, "upstream": list(t.upstream), "group": t.group}
            for t in spec.tasks.values()
        ],
        "schedule_preview": [iso(t) for t in data.schedule_preview(spec, now())],
    }
    if spec.asset_condition is not None:  # issue 15: the asset schedule and what it waits for
        body["asset_schedule"] = spec.asset_condition.describe()
        body["asset_waits"] = [w.to_dict() for w in store.asset_waits(dag_id, spec)]
        body["asset_reasons"] = [r.to_dict() for r in store.asset_reasons(dag_id, now())]
    for t, item in zip(spec.tasks.values(), body["tasks"], strict=True):
        if t.outlets:
            item["outlets"] = list(t.outlets)
    return jsonify(body)


@bp.get("/dags/<dag_id>/runs")
def runs(dag_id: str) -> Response:
    store = get_store()
    store.get_dag(dag_id)  # 404 for an unknown DAG, not an empty list
    offset = int_arg("offset", 0) or 0
    items, total = store.runs_page(
        dag_id, state=request.args.get("state") or None, offset=offset, limit=_limit()
    )
    return jsonify({"dag_runs": [r.to_dict() for r in items], "total_entries": total})


@bp.get("/dags/<dag_id>/grid")
def grid(dag_id: str) -> Response:
    store = get_store()
    spec = store.current_spec(dag_id)
    state, kind = read_run_filters()  # issue 27: the page's grid filters
    query = GridQuery(run_state=state, run_type=kind)
    runs_, cells = data.grid(store, dag_id, limit=_limit(data.GRID_RUNS), query=query)
    by_run: dict[str, dict[str, Any]] = {r.run_id: {} for r in runs_}
    for (rid, t), c in cells.items():  # one pass over the cells, not one per run
        by_run[rid][t] = {"state": c.state, "try_number": c.try_number}
    return jsonify(
        {
            "tasks": list(spec.topological_order),
            "dag_runs": [r.to_dict() | {"cells": by_run[r.run_id]} for r in runs_],
        }
    )


@bp.get("/dags/<dag_id>/summary")
def dag_summary(dag_id: str) -> Response:
    """What an open DAG page polls: its latest runs' task states counted, not its cells."""
    body = get_store().dag_summary(dag_id, limit=_limit(data.GRID_RUNS))
    if not body:
        from orchestrator.errors import NotFoundError

        raise NotFoundError(f"no DAG with dag_id {dag_id!r}")
    return jsonify(body)


@bp.get("/runs/<run_id>")
def run(run_id: str) -> Response:
    ctx = data.run_facts(get_store(), run_id)  # no graph layout, no Gantt: not returned
    version = data.run_version(get_store(), ctx["run"])["version"]
    return jsonify(
        ctx["run"].to_dict()
        | {
            "dag_version": version.number if version else None,
            "task_instances": [t.to_dict() for t in ctx["tis"]],
            "tries": [t.to_dict() for t in ctx["tries"]],
        }
    )


@bp.get("/runs/<run_id>/summary")
def run_summary(run_id: str) -> Response:
    """What an open run page polls: a few indexed counts, whatever the run's size."""
    body = get_store().run_summary(run_id)
    if not body:
        from orchestrator.errors import NotFoundError

        raise NotFoundError(f"no run with run_id {run_id!r}")
    return jsonify(
        body | {"end_date": iso(body["end_date"]), "last_try_end": iso(body["last_try_end"])}
    )


@bp.get("/runs/<run_id>/tasks/<task_id>")
def task_instance(run_id: str, task_id: str, map_index: int | None = None) -> Response:
    s = get_settings()
    ctx = data.task_page(
        get_store(),
        run_id,
        task_id,
        now(),
        s.log_dir,
        timedelta(seconds=s.lease_seconds),
        map_index,
        mask=get_log_mask(),
    )
    return jsonify(
        ctx["ti"].to_dict()
        | {
            "tries": [  # how each ended, as the page's tabs say it (issue 27)
                t.to_dict() | {"exit_reason": ctx["exits"][t.try_number]} for t in ctx["tries"]
            ],
            "rendered_command": ctx["command"] or None,
            "upstream_results": ctx["results"],
            "result": ctx["result"],
            "why_not_running": [r.to_dict() for r in ctx["reasons"]],
        }
    )


@bp.get("/runs/<run_id>/tasks/<task_id>/map/<int:map_index>")
def task_instance_mapped(run_id: str, task_id: str, map_index: int) -> Response:
    """One instance of a mapped task (issue 14)."""
    return task_instance(run_id, task_id, map_index)


@bp.get("/runs/<run_id>/tasks/<task_id>/instances")
def task_instances(run_id: str, task_id: str) -> Response:
    """A mapped task's instances, ``page`` by page (100 each), optionally of one ``state``."""
    ctx = mapped.instances_page(
        get_store(), run_id, task_id, state=mapped.state_arg(), page=int_arg("page", 1, lo=1) or 1
    )
    return jsonify(
        {
            "run_id": run_id,
            "task_id": task_id,
            "counts": ctx["counts"],
            "total_entries": ctx["total"],
            "page": ctx["page"],
            "pages": ctx["pages"],
            "task_instances": [
                asdict(i) | {"start_date": iso(i.start_date), "end_date": iso(i.end_date)}
                for i in ctx["instances"]
            ],
        }
    )


@bp.get("/runs/<run_id>/groups/<group>/instances")
def group_instances(run_id: str, group: str) -> Response:
    """A mapped task group's instances, ``page`` by page (100 each): each one's tasks'
    states and names (issue 25 item 7)."""
    ctx = mapped.group_page(get_store(), run_id, group, page=int_arg("page", 1, lo=1) or 1)
    return jsonify(
        {
            "run_id": run_id,
            "group": group,
            "task_ids": list(ctx["members"]),
            "total_entries": ctx["total"],
            "page": ctx["page"],
            "pages": ctx["pages"],
            "instances": [
                {"map_index": i.map_index, "states": i.states, "names": i.names}
                for i in ctx["instances"]
            ],
        }
    )


@bp.get("/runs/<run_id>/tasks/<task_id>/map/<int:map_index>/tries/<int:try_number>/log")
def log_mapped(run_id: str, task_id: str, map_index: int, try_number: int) -> Response:
    """A try's log of one instance of a mapped task (issue 14)."""
    return log(run_id, task_id, try_number, map_index)


@bp.get("/runs/<run_id>/tasks/<task_id>/tries/<int:try_number>/log")
def log(run_id: str, task_id: str, try_number: int, map_index: int | None = None) -> Response:
    """A try's log: raw bytes from ``offset`` (or its tail); with ``format=html`` a page
    of whole numbered lines for the log viewer (``offset``, ``before``, ``line``); with
    ``q`` the lines of the whole log containing that text (docs/webui.md, "Logs")."""
    store = get_store()
    t = find_try(store, run_id, task_id, try_number, map_index)
    fmt = choice_arg("format", ("text", "html"), "text")
    query = text_arg("q", MAX_QUERY)
    offset, before = int_arg("offset", None), int_arg("before", None)
    line = int_arg("line", None, lo=1)
    if offset is not None and before is not None:
        raise ConfigError("query parameter 'before': give either 'offset' or 'before', not both")
    status = {"state": t.state, "finished": t.end_date is not None}
    if query is not None:
        found = search_try_log(store, get_settings().log_dir, t, query, mask=get_log_mask())
        return jsonify(found | status)
    if fmt == "text" and before is None and line is None:
        chunk = read_try_log(store, get_settings().log_dir, t, offset, mask=get_log_mask())
        return jsonify(asdict(chunk) | status)
    view = view_try_log(
        store,
        get_settings().log_dir,
        t,
        offset=offset,
        before=before,
        line=line,
        mask=get_log_mask(),
    )
    if view.page is None:
        return jsonify({"missing": True, "source": view.source} | status)
    page = view.page
    out = {
        "missing": False,
        "source": view.source,
        "text": page.text,
        "offset": page.offset,
        "next_offset": page.next_offset,
        "first_line": page.first_line,
        "next_line": page.first_line + page.text.count("\n"),
        "size": page.size,
    }
    if fmt == "html":
        out["html"] = str(render_lines(page.text, page.first_line))
    return jsonify(out | status)


@bp.get("/events")
def events() -> Response:
    items = get_store().events(
        before=int_arg("before", None),
        limit=_limit(100),
        **{k: v or None for k, v in filters().items()},
    )
    return jsonify({"events": [e.to_dict() for e in items], "total_entries": len(items)})


@bp.get("/import-errors")
def import_errors() -> Response:
    items = [e.to_dict() for e in get_store().import_errors()]
    return jsonify({"import_errors": items, "total_entries": len(items)})
