"""HTML page: the event log, filterable by DAG, run, kind and actor (who asked),
paged back by event id."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from ..current import get_store
from ..inputs import int_arg

bp = Blueprint("events", __name__)

PAGE = 100
KNOWN_KINDS = (
    "run_created", "run_success", "run_failed", "run_cancelled", "task_retry",
    "task_dead_lettered", "task_cleared", "task_marked_success", "task_marked_failed",
    "stale_write_rejected", "dag_added", "dag_paused", "dag_unpaused", "dag_removed",
    "schedule_changed", "import_error", "task_lost", "login_failed", "user_added",
    "user_deleted", "user_password_set",
    "variable_set", "variable_deleted", "connection_set", "connection_deleted",  # issue 16
    "user_role_set", "token_created", "token_revoked",  # issue 17: roles and tokens
    "run_cleared", "backfill_created", "backfill_cancelled",
)  # fmt: skip


def filters() -> dict[str, str]:
    return {k: request.args.get(k, "").strip() for k in ("dag_id", "run_id", "kind", "actor")}


@bp.get("/events")
def event_log() -> str:
    f = filters()
    before = int_arg("before", None)
    items = get_store().events(before=before, limit=PAGE, **{k: v or None for k, v in f.items()})
    older = items[-1].id if len(items) == PAGE else None
    return render_template(
        "events.html", events=items, filters=f, kinds=KNOWN_KINDS, older=older, before=before
    )
