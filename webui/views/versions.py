"""A DAG's stored versions (issue 17): one version's file, and what changed between two.

Pages: ``/dags/<dag_id>/versions/<ref>`` and ``/dags/<dag_id>/versions/<a>/diff/<b>``;
the JSON API mirrors them under ``/api/v1``. ``ref`` is a version number, ``current``
or a hash prefix (``store.dag_version``). The DAG page lists the versions; a run's
page names the version it ran.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from werkzeug.wrappers import Response

from ..current import get_store
from ..formatting import iso

bp = Blueprint("versions", __name__)
api_bp = Blueprint("api_versions", __name__, url_prefix="/api/v1")


def version_json(x: Any) -> dict[str, Any]:
    return x.to_dict() | {"created_at": iso(x.created_at)}


def _version(dag_id: str, ref: str) -> dict[str, Any]:
    store = get_store()
    dag = store.get_dag(dag_id)
    version = store.dag_version(dag_id, ref, count_runs=True)
    previous = None
    if version.number > 1:
        previous = store.compare_versions(dag_id, str(version.number - 1), str(version.number))
    return {
        "dag": dag,
        "version": version,
        "source": store.version_source(dag_id, version.hash),
        "previous": previous,
    }


@bp.get("/dags/<dag_id>/versions/<ref>")
def version_page(dag_id: str, ref: str) -> str:
    return render_template("dag_version.html", **_version(dag_id, ref))


@bp.get("/dags/<dag_id>/versions/<a>/diff/<b>")
def diff_page(dag_id: str, a: str, b: str) -> str:
    store = get_store()
    got = store.compare_versions(dag_id, a, b)
    return render_template("dag_version_diff.html", dag=store.get_dag(dag_id), this=got, **got)


@api_bp.get("/dags/<dag_id>/versions")
def versions(dag_id: str) -> Response:
    items = [version_json(x) for x in get_store().dag_versions(dag_id, count_runs=True)]
    return jsonify({"dag_id": dag_id, "versions": items, "total_entries": len(items)})


@api_bp.get("/dags/<dag_id>/versions/<ref>")
def version(dag_id: str, ref: str) -> Response:
    ctx = _version(dag_id, ref)
    src = ctx["source"]
    prev = ctx["previous"]
    return jsonify(
        version_json(ctx["version"])
        | {
            "source": None if src is None else src.text,
            "source_truncated": None if src is None else src.truncated,
            "changes_from_previous": None if prev is None else prev["changes"],
        }
    )


@api_bp.get("/dags/<dag_id>/versions/<a>/diff/<b>")
def diff(dag_id: str, a: str, b: str) -> Response:
    got = get_store().compare_versions(dag_id, a, b)
    return jsonify(
        {
            "from": version_json(got["from"]),
            "to": version_json(got["to"]),
            "changes": got["changes"],
            "diff": "\n".join(got["diff"]),
            "source_missing": got["source_missing"],
        }
    )
