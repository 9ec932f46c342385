"""The JSON API of variables and connections (issue 16), as the pages: lists never
decrypt (secret values, passwords and extras are ``***``), writes are POST with a JSON
body and the ``X-CSRF-Token`` header, bad input is 400 and stores nothing."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify
from werkzeug.wrappers import Response

from orchestrator.authoring.connection_edit import carry_secrets
from orchestrator.authoring.credentials import Connection, connection_from_fields
from orchestrator.errors import ConfigError
from orchestrator.store.credentials.secret_box import box_of

from ..current import get_settings, get_store, now
from ..inputs import json_body

bp = Blueprint("api_credentials", __name__, url_prefix="/api/v1")

CONNECTION_FIELDS = {
    "conn_id": str, "uri": str, "conn_type": str, "host": str, "login": str, "password": str,
    "port": int, "schema": str, "extra": dict, "description": str, "replace": bool,
}  # fmt: skip


def _iso(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "updated_at": row["updated_at"].isoformat()}


@bp.get("/variables")
def variables() -> Response:
    return jsonify([_iso(v.to_dict()) for v in get_store().list_variables()])


@bp.post("/variables")
def set_variable() -> tuple[Response, int]:
    body = json_body(
        {"key": str, "value": str, "is_json": bool, "description": str, "is_secret": bool},
        required=("key", "value"),
    )
    record = get_store().set_variable(
        body["key"],
        body["value"],
        now(),
        box_of(get_settings()),
        is_json=body.get("is_json", False),
        description=body.get("description"),
        secret=body.get("is_secret", False),
    )
    kind = "secret variable" if record.is_secret else "variable"
    return jsonify({"message": f"{kind} {record.key} set"}), 201


@bp.post("/variables/<key>/delete")
def delete_variable(key: str) -> Response:
    json_body({})
    get_store().delete_variable(key, now())
    return jsonify({"message": f"variable {key} deleted"})


@bp.get("/connections")
def connections() -> Response:
    return jsonify([_iso(c) for c in get_store().list_connections()])


@bp.post("/connections")
def save_connection() -> tuple[Response, int]:
    body = json_body(CONNECTION_FIELDS, required=("conn_id",))
    conn_id, replace = body.pop("conn_id"), body.pop("replace", False)
    uri = body.pop("uri", None)
    if uri is not None:
        if set(body) - {"description"}:
            raise ConfigError("give either uri or the fields (conn_type, host, ...), not both")
        conn = Connection.from_uri(conn_id, uri, body.get("description"))
    elif "conn_type" not in body:
        raise ConfigError("give uri, or conn_type with the other fields")
    else:
        conn = connection_from_fields(conn_id, body)
        if replace:  # as the form: what is left out carries over only to the same place
            stored = get_store().get_connection(conn_id, box_of(get_settings()))
            conn = carry_secrets(conn, stored, password_given="password" in body,
                                 extra_given="extra" in body)  # fmt: skip
    get_store().import_connections([conn], now(), box_of(get_settings()), overwrite=replace)
    return jsonify({"message": f"connection {conn_id} {'saved' if replace else 'added'}"}), 201


@bp.post("/connections/<conn_id>/delete")
def delete_connection(conn_id: str) -> Response:
    json_body({})
    get_store().delete_connection(conn_id, now())
    return jsonify({"message": f"connection {conn_id} deleted"})
