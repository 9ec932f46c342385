"""HTML pages: the DAG list, one DAG (grid, graph, history, source, schedule), import errors."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from .. import data
from ..current import get_store, now
from ..params_form import fields_for

bp = Blueprint("pages", __name__)


@bp.get("/")
def dag_list() -> str:
    tag = request.args.get("tag", "").strip()
    search = request.args.get("q", "").strip()
    ctx = data.dag_list(get_store(), tag=tag, search=search)
    return render_template("dag_list.html", tag=tag, q=search, recent=data.RECENT_RUNS, **ctx)


@bp.get("/dags/<dag_id>")
def dag_detail(dag_id: str) -> str:
    ctx = data.dag_page(
        get_store(),
        dag_id,
        now(),
        run_id=request.args.get("run_id", ""),
        state=request.args.get("state", ""),
        page=request.args.get("page", 1, type=int) or 1,
    )
    return render_template(
        "dag_detail.html",
        fields=fields_for(ctx["spec"].params),
        source=data.read_source(ctx["dag"].fileloc),
        **ctx,
    )


@bp.get("/import-errors")
def import_errors() -> str:
    return render_template("import_errors.html", import_errors=get_store().import_errors())
