"""HTML pages: variables and connections, listed and edited (issue 16).

Secret values never reach a page: a secret variable's value and a connection's
password and extra show as ``***`` and are never put in a form. Editing a secret
variable, or a connection, with the value (password, extra) left blank keeps the
stored one. Every write is a POST
(CSRF-checked before it runs) that flashes what it did and redirects back.
"""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from orchestrator.authoring.connection_edit import carry_secrets
from orchestrator.authoring.credentials import Connection, connection_from_fields
from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.store.credentials.secret_box import box_of

from ..current import get_settings, get_store, now
from ..inputs import form_choice

bp = Blueprint("credentials", __name__)

FLASH_CHARS = 300
ON_OFF = ("on", "off")


def _flash(message: str, category: str) -> None:
    flash(message[:FLASH_CHARS], category)


def _checked(name: str) -> bool:
    return form_choice(name, ON_OFF, default="off") == "on"


@bp.get("/variables")
def variables() -> str:
    store = get_store()
    items = store.list_variables()
    edit = next((v for v in items if v.key == request.args.get("edit")), None)
    return render_template("variables.html", variables=items, edit=edit)


@bp.post("/variables")
def set_variable() -> Response:
    form = request.form
    name = form.get("key", "").strip()
    try:
        value = form.get("value", "")
        if not value and _checked("keep_blank"):  # a secret edited without a new value
            stored = get_store().get_variable(name, box_of(get_settings()))
            value = stored.value if stored is not None else value
        record = get_store().set_variable(
            name,
            value,
            now(),
            box_of(get_settings()),
            is_json=_checked("is_json"),
            description=form.get("description") or None,
            secret=_checked("is_secret"),
        )
        _flash(f"{'secret ' if record.is_secret else ''}variable {name} set", "ok")
    except OrchestratorError as exc:
        _flash(str(exc), "error")
    return redirect(url_for("credentials.variables"))


@bp.post("/variables/<key>/delete")
def delete_variable(key: str) -> Response:
    try:
        get_store().delete_variable(key, now())
        _flash(f"variable {key} deleted", "ok")
    except OrchestratorError as exc:
        _flash(str(exc), "error")
    return redirect(url_for("credentials.variables"))


@bp.get("/connections")
def connections() -> str:
    items = get_store().list_connections()
    edit = next((c for c in items if c["conn_id"] == request.args.get("edit")), None)
    return render_template("connections.html", connections=items, edit=edit)


def _from_form(store: object, replace: bool) -> Connection:
    form = request.form
    conn_id = form.get("conn_id", "").strip()
    uri = form.get("uri", "").strip()
    if uri:
        return Connection.from_uri(conn_id, uri, form.get("description") or None)
    fields = {
        name: form.get(name, "").strip() or None
        for name in ("conn_type", "host", "login", "port", "schema", "description")
    }
    fields["password"] = form.get("password") or None
    fields["extra"] = form.get("extra", "").strip() or None
    if not fields["conn_type"]:
        raise ConfigError("give a URI, or a connection type with the other fields")
    conn = connection_from_fields(conn_id, fields)
    if replace and (fields["password"] is None or fields["extra"] is None):
        stored = store.get_connection(conn_id, box_of(get_settings()))  # type: ignore[attr-defined]
        # a blank password or extra keeps the stored one, unless the connection now
        # points elsewhere (type, host, port or login changed): then it is dropped
        conn = carry_secrets(conn, stored, password_given=fields["password"] is not None,
                             extra_given=fields["extra"] is not None)  # fmt: skip
    return conn


@bp.post("/connections")
def save_connection() -> Response:
    store = get_store()
    replace = _checked("replace")
    try:
        conn = _from_form(store, replace)
        store.import_connections([conn], now(), box_of(get_settings()), overwrite=replace)
        _flash(f"connection {conn.conn_id} {'saved' if replace else 'added'}", "ok")
    except OrchestratorError as exc:
        _flash(str(exc), "error")
    return redirect(url_for("credentials.connections"))


@bp.post("/connections/<conn_id>/delete")
def delete_connection(conn_id: str) -> Response:
    try:
        get_store().delete_connection(conn_id, now())
        _flash(f"connection {conn_id} deleted", "ok")
    except OrchestratorError as exc:
        _flash(str(exc), "error")
    return redirect(url_for("credentials.connections"))
