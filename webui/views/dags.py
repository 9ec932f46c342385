"""HTML pages: the DAG list, one DAG (grid, graph, history, source, schedule), import errors."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from .. import dag_list as listing
from .. import data
from ..current import get_layouts, get_store, now
from ..grid_view import RUN_TYPES, RUNS_SHOWN, read_grid_query
from ..inputs import MAX_INT, int_arg
from ..params_form import fields_for

bp = Blueprint("pages", __name__)

MAX_PAGE = MAX_INT // data.HISTORY_PAGE  # so the page's offset still fits a BIGINT


@bp.get("/")
def dag_list() -> str:
    query = listing.read_query()
    ctx = listing.dag_list(get_store(), query)
    return render_template(
        "dag_list.html", tag=query.tag, q=query.search, recent=listing.RECENT_RUNS, **ctx
    )


@bp.get("/dags/<dag_id>")
def dag_detail(dag_id: str) -> str:
    ctx = data.dag_page(
        get_store(),
        get_layouts(),
        dag_id,
        now(),
        run_id=request.args.get("run_id", ""),
        state=request.args.get("state", ""),
        page=int_arg("page", 1, hi=MAX_PAGE) or 1,
        expand=request.args.get("expand", ""),  # issue 27: the graph's open task groups
        query=read_grid_query(),  # issue 27: runs shown, run state and run type
    )
    return render_template(
        "dag_detail.html",
        fields=fields_for(
            ctx["spec"].params, ctx["spec"].param_schemas, ctx["spec"].required_params
        ),
        asset_reasons=get_store().asset_reasons(dag_id, now()),  # issue 15
        runs_shown=RUNS_SHOWN,
        run_types=list(RUN_TYPES),
        **ctx,
    )


@bp.get("/import-errors")
def import_errors() -> str:
    return render_template("import_errors.html", import_errors=get_store().import_errors())
