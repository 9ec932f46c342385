"""HTML form actions. All POST (CSRF-checked before they run); each flashes what it did
and redirects back (Post/Redirect/Get), so reloading never repeats an action.

A form field outside its documented values (``paused`` not ``true``/``false``...) is
400 and changes nothing. Flashed messages are cut to :data:`FLASH_CHARS`: they travel
in the session cookie, which browsers drop beyond 4 KB."""

from __future__ import annotations

from collections.abc import Callable

from flask import Blueprint, flash, redirect, request, url_for
from werkzeug.wrappers import Response

from orchestrator.errors import ConfigError, OrchestratorError

from .. import operations as ops
from ..current import get_store, now
from ..dag_list import MAX_BULK
from ..inputs import form_choice
from ..mapped import form_map_index
from ..params_form import parse_extra_conf, parse_params
from ..security import current_actor

bp = Blueprint("actions", __name__)

FLASH_CHARS = 300
TRUE_FALSE = ("true", "false")


def _flash(message: str, category: str) -> None:
    if len(message) > FLASH_CHARS:
        message = message[: FLASH_CHARS - 3] + "..."
    flash(message, category)


def _do(action: Callable[[], str], back: str) -> Response:
    try:
        _flash(action(), "ok")
    except OrchestratorError as exc:
        _flash(str(exc), "error")
    return redirect(back)


def _dag_url(dag_id: str) -> str:
    return url_for("pages.dag_detail", dag_id=dag_id)


def _ti_url(run_id: str, task_id: str) -> str:
    return url_for("runs.task_detail", run_id=run_id, task_id=task_id)


def _who() -> str:
    return current_actor("web")


@bp.post("/dags/<dag_id>/trigger")
def trigger(dag_id: str) -> Response:
    store = get_store()
    try:
        spec = store.current_spec(dag_id)
        conf = parse_extra_conf(spec.params, request.form)  # issue 26: other keys
        conf.update(parse_params(spec.params, request.form, spec.param_schemas))
        run_id, message = ops.trigger(store, dag_id, conf, now(), _who())
    except OrchestratorError as exc:
        _flash(str(exc), "error")
        return redirect(_dag_url(dag_id))
    _flash(message, "ok")
    return redirect(url_for("runs.run_detail", run_id=run_id))


@bp.post("/dags/<dag_id>/pause")
def pause(dag_id: str) -> Response:
    paused = form_choice("paused", TRUE_FALSE) == "true"
    back = request.form.get("back") == "list"
    target = url_for("pages.dag_list") if back else _dag_url(dag_id)
    return _do(lambda: ops.set_paused(get_store(), dag_id, paused, now(), _who()), target)


@bp.post("/dags/bulk-pause")
def bulk_pause() -> Response:
    """Pause or unpause the DAGs checked in the list (form fields ``dag_id``, repeated),
    in one transaction; ``back``: the list's query string to return to."""
    paused = form_choice("paused", TRUE_FALSE) == "true"
    dag_ids = [x for x in request.form.getlist("dag_id") if x]
    if not dag_ids:
        raise ConfigError("form field 'dag_id': check at least one DAG")
    if len(dag_ids) > MAX_BULK:
        raise ConfigError(f"form field 'dag_id': at most {MAX_BULK} DAGs, got {len(dag_ids)}")
    back = request.form.get("back", "")
    target = url_for("pages.dag_list")
    if back.startswith("?") and "\n" not in back and "\r" not in back:
        target += back
    return _do(lambda: ops.set_paused_many(get_store(), dag_ids, paused, now(), _who()), target)


@bp.post("/dags/<dag_id>/backfill")
def backfill(dag_id: str) -> Response:
    form = request.form
    return _do(
        lambda: ops.backfill(
            get_store(), dag_id, form.get("start", ""), form.get("end", ""), now(), _who()
        ),
        _dag_url(dag_id),
    )


@bp.post("/runs/<run_id>/cancel")
def cancel(run_id: str) -> Response:
    return _do(
        lambda: ops.cancel(get_store(), run_id, now(), _who()),
        url_for("runs.run_detail", run_id=run_id),
    )


@bp.post("/runs/<run_id>/tasks/<task_id>/clear")
def clear(run_id: str, task_id: str) -> Response:
    downstream = form_choice("downstream", TRUE_FALSE, default="false") == "true"
    map_index = form_map_index()  # one instance of a mapped task (issue 14)
    back = _ti_url(run_id, task_id)
    if map_index is not None:
        back = url_for(
            "runs.task_detail_mapped", run_id=run_id, task_id=task_id, map_index=map_index
        )
    return _do(
        lambda: ops.clear(get_store(), run_id, task_id, downstream, now(), _who(), map_index),
        back,
    )


@bp.post("/runs/<run_id>/tasks/<task_id>/mark")
def mark(run_id: str, task_id: str) -> Response:
    state = request.form.get("state", "")
    map_index = form_map_index()  # one instance of a mapped task (issue 14)
    back = _ti_url(run_id, task_id)
    if map_index is not None:
        back = url_for(
            "runs.task_detail_mapped", run_id=run_id, task_id=task_id, map_index=map_index
        )
    return _do(
        lambda: ops.mark(get_store(), run_id, task_id, state, now(), _who(), map_index),
        back,
    )
