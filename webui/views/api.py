"""The JSON API (``/api/v1``): the same data as the pages, read-only for now."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request
from werkzeug.wrappers import Response

from orchestrator.store.records import DagRecord
from webui.app import get_store
from webui.formatting import iso

bp = Blueprint("api", __name__, url_prefix="/api/v1")

MAX_LIMIT = 500


def dag_json(dag: DagRecord) -> dict[str, Any]:
    return {
        "dag_id": dag.dag_id,
        "is_paused": dag.is_paused,
        "is_active": dag.is_active,
        "schedule": dag.schedule,
        "timezone": dag.timezone,
        "next_logical_date": iso(dag.next_logical_date),
        "description": dag.description,
        "tags": list(dag.tags),
        "fileloc": dag.fileloc,
    }


@bp.get("/dags")
def dags() -> Response:
    items = [dag_json(d) for d in get_store().list_dags()]
    return jsonify({"dags": items, "total_entries": len(items)})


@bp.get("/dags/<dag_id>")
def dag(dag_id: str) -> Response:
    return jsonify(dag_json(get_store().get_dag(dag_id)))


@bp.get("/dags/<dag_id>/runs")
def runs(dag_id: str) -> Response:
    store = get_store()
    store.get_dag(dag_id)  # 404 for an unknown DAG, not an empty list
    limit = request.args.get("limit", default=50, type=int)
    limit = min(max(limit, 1), MAX_LIMIT)
    items = [r.to_dict() for r in store.list_runs(dag_id=dag_id, limit=limit)]
    return jsonify({"dag_runs": items, "total_entries": len(items)})


@bp.get("/import-errors")
def import_errors() -> Response:
    items = [e.to_dict() for e in get_store().import_errors()]
    return jsonify({"import_errors": items, "total_entries": len(items)})
