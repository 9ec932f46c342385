"""The calendar of a DAG's daily run outcomes over a year (issue 27 item 8): the page
``GET /dags/<dag_id>/calendar?year=`` and its JSON ``GET /api/v1/dags/<dag_id>/calendar``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from werkzeug.wrappers import Response

from .. import calendar
from ..current import get_store, now
from ..inputs import int_arg

bp = Blueprint("calendar", __name__)


def _calendar(dag_id: str) -> dict[str, Any]:
    store = get_store()
    dag = store.get_dag(dag_id)  # NotFoundError: 404 naming it
    this_year = now().astimezone(calendar.ZoneInfo(dag.timezone)).year
    year = int_arg("year", this_year, lo=1970, hi=9998) or this_year
    start, end = calendar.year_bounds(year, dag.timezone)
    days = calendar.days_of(store.run_calendar(dag_id, start, end), dag.timezone)
    return {"dag": dag, "year": year, "days": days}


@bp.get("/dags/<dag_id>/calendar")
def calendar_page(dag_id: str) -> str:
    ctx = _calendar(dag_id)
    weeks = calendar.year_weeks(ctx["year"], ctx["days"])
    total = sum(sum(c.values()) for c in ctx["days"].values())
    return render_template("calendar.html", weeks=weeks, total=total, **ctx)


@bp.get("/api/v1/dags/<dag_id>/calendar")
def calendar_api(dag_id: str) -> Response:
    ctx = _calendar(dag_id)
    return jsonify(
        {
            "dag_id": dag_id,
            "year": ctx["year"],
            "timezone": ctx["dag"].timezone,
            "days": {d.isoformat(): counts for d, counts in sorted(ctx["days"].items())},
        }
    )
