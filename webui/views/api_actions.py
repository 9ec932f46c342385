"""The JSON API, action side: POST with a JSON body and an ``X-CSRF-Token`` header.

Get the token from ``GET /api/v1/csrf`` in the same session (cookie). Answers
``{"message": ...}`` saying what was done, or an error with ``detail``. A body must
be a JSON object with exactly the documented fields and types (see
:func:`webui.inputs.json_body`); anything else is 400 and changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, jsonify
from werkzeug.wrappers import Response

from orchestrator.errors import ConfigError

from .. import operations as ops
from ..current import get_store, now
from ..inputs import json_body
from ..security import csrf_token, current_actor

bp = Blueprint("api_actions", __name__, url_prefix="/api/v1")


@bp.get("/csrf")
def csrf() -> Response:
    return jsonify({"csrf_token": csrf_token()})


def _who() -> str:
    return current_actor("api")


def _logical_date(text: str | None) -> datetime | None:
    """An ISO 8601 time with its offset (``2026-01-31T02:00:00+00:00``), or None."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"logical_date: expected an ISO 8601 time like 2026-01-31T02:00:00+00:00, "
            f"got {text[:60]!r}"
        ) from None
    if when.tzinfo is None:
        raise ConfigError(f"logical_date {text[:60]!r}: give its UTC offset (+00:00 or Z)")
    return when.astimezone(UTC)


@bp.post("/dags/<dag_id>/runs")
def trigger(dag_id: str) -> tuple[Response, int]:
    body = json_body({"conf": dict, "logical_date": str})
    conf = body.get("conf", {})
    when = _logical_date(body.get("logical_date"))
    store = get_store()  # the conf is checked by the store (validate_conf), as elsewhere
    run_id, message = ops.trigger(store, dag_id, conf, now(), _who(), logical_date=when)
    return jsonify({"run_id": run_id, "message": message}), 201


@bp.post("/dags/<dag_id>/pause")
def pause(dag_id: str) -> Response:
    paused = json_body({"paused": bool}, required=("paused",))["paused"]
    return jsonify({"message": ops.set_paused(get_store(), dag_id, paused, now(), _who())})


@bp.post("/dags/<dag_id>/backfill")
def backfill(dag_id: str) -> Response:
    body = json_body({"start": str, "end": str, "conf": dict}, required=("start", "end"))
    message = ops.backfill(
        get_store(), dag_id, body["start"], body["end"], now(), _who(), conf=body.get("conf")
    )
    return jsonify({"message": message})


@bp.post("/runs/<run_id>/cancel")
def cancel(run_id: str) -> Response:
    json_body({})
    return jsonify({"message": ops.cancel(get_store(), run_id, now(), _who())})


@bp.post("/runs/<run_id>/tasks/<task_id>/clear")
def clear(run_id: str, task_id: str) -> Response:
    body = json_body({"downstream": bool, "map_index": int})
    map_index = body.get("map_index")  # one instance of a mapped task (issue 14)
    if map_index is not None and map_index < 0:
        from orchestrator.errors import ConfigError

        raise ConfigError(f"'map_index' must be 0 or more, got {map_index}")
    message = ops.clear(
        get_store(), run_id, task_id, body.get("downstream", False), now(), _who(), map_index
    )
    return jsonify({"message": message})


@bp.post("/runs/<run_id>/tasks/<task_id>/mark")
def mark(run_id: str, task_id: str) -> Response:
    state = json_body({"state": str}, required=("state",))["state"]
    return jsonify({"message": ops.mark(get_store(), run_id, task_id, state, now(), _who())})
