"""The HTML pages: the DAG list, one DAG's runs, import errors."""

from __future__ import annotations

from flask import Blueprint, render_template

from webui.app import get_store
from webui.queries import recent_runs

bp = Blueprint("pages", __name__)

RECENT_RUNS = 10
DAG_PAGE_RUNS = 50


@bp.get("/")
def dag_list() -> str:
    store = get_store()
    dags = store.list_dags()
    marks = recent_runs(store, per_dag=RECENT_RUNS)
    return render_template(
        "dag_list.html",
        dags=dags,
        marks=marks,
        import_errors=store.import_errors(),
        recent=RECENT_RUNS,
    )


@bp.get("/dags/<dag_id>")
def dag_detail(dag_id: str) -> str:
    store = get_store()
    dag = store.get_dag(dag_id)  # NotFoundError -> 404 page
    runs = store.list_runs(dag_id=dag_id, limit=DAG_PAGE_RUNS)
    return render_template("dag_detail.html", dag=dag, runs=runs, limit=DAG_PAGE_RUNS)


@bp.get("/import-errors")
def import_errors() -> str:
    return render_template("import_errors.html", import_errors=get_store().import_errors())
