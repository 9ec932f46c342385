"""Asset watchers and deferred tasks (issue 30): the watchers page, their JSON API, and
the signed webhook endpoint.

Pages: ``GET /watchers`` (every watcher: connection state, last message, messages and
rejects, the last error) and the deferred tasks with their triggers. API:
``GET /api/v1/watchers``, ``GET /api/v1/deferred``. ``POST /hooks/<path>`` is a
:class:`~orchestrator.watchers.WebhookWatcher`'s endpoint: no login and no CSRF token
(the sender is a machine), but an HMAC-SHA256 signature over ``<timestamp>.<body>`` with
the connection's password (``Orchestrator-Signature: t=<unix>,v1=<hex>``), compared in
constant time, and a timestamp inside the replay window; ``Orchestrator-Delivery`` is
the message id (a replay inside the window is a duplicate: no second event).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from typing import Any

from flask import Blueprint, jsonify, render_template, request
from werkzeug.wrappers import Response

from ..current import get_settings, get_store, now, wake_scheduler

log = logging.getLogger(__name__)
bp = Blueprint("watchers", __name__)
SIGNATURE = "Orchestrator-Signature"
DELIVERY = "Orchestrator-Delivery"


@bp.get("/watchers")
def watcher_list() -> str:
    store = get_store()
    return render_template(
        "watchers.html",
        watchers=store.watcher_states(),
        deferred=store.deferred_instances(limit=200),
        triggerers=store.triggerers(),
    )


@bp.get("/api/v1/watchers")
def api_watchers() -> Response:
    return jsonify({"watchers": [w.to_dict() for w in get_store().watcher_states()]})


@bp.get("/api/v1/deferred")
def api_deferred() -> Response:
    store = get_store()
    return jsonify(
        {
            "deferred": [d.to_dict() for d in store.deferred_instances(limit=500)],
            "triggerers": [t.to_dict() for t in store.triggerers()],
        }
    )


def _webhook(path: str) -> Any:
    store = get_store()
    for attempt in (0, 1):
        found = [w for w in store.watcher_states() if w.kind == "webhook" and w.source == path]
        if found or attempt:
            return found[0] if found else None
        from orchestrator.engine.watcher_runtime import declared_watchers

        store.sync_watchers(declared_watchers(store), now())  # a DAG declared it since
    return None


def signature_problem(header: str, body: bytes, secret: str, window: int, at: float) -> str | None:
    """None if ``header`` (``t=<unix>,v1=<hex>``) signs ``body`` with ``secret`` within
    ``window`` seconds of ``at``; else what is wrong."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p) if header else {}
    stamp, given = parts.get("t", ""), parts.get("v1", "")
    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12) or not given:
        return f"no valid {SIGNATURE} header (t=<unix time>,v1=<hex HMAC-SHA256>)"
    if abs(at - int(stamp)) > window:
        return f"timestamp {stamp} is outside the {window}s replay window"
    expected = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), given.strip().lower().encode()):
        return "signature does not match"
    return None


@bp.post("/hooks/<path>")
def webhook(path: str) -> tuple[Response, int]:
    from orchestrator.engine.secrets_chain import SecretsChain

    store, settings = get_store(), get_settings()
    watcher = _webhook(path)
    if watcher is None:
        return jsonify({"status": 404, "detail": f"no webhook watcher at {path!r}"}), 404
    conn = SecretsChain(store, settings).connection(watcher.conn_id) if watcher.conn_id else None
    if conn is None or not conn.password:
        log.error("webhook %s: connection %r has no password (the secret)", path, watcher.conn_id)
        return jsonify({"status": 503, "detail": "the webhook's secret is not configured"}), 503
    body = request.get_data(cache=False)
    window = int(watcher.spec.get("replay_window") or 300)
    problem = signature_problem(request.headers.get(SIGNATURE, ""), body, conn.password,
                                window, time.time())  # fmt: skip
    if problem is not None:
        store.reject_message(watcher.key, problem, now())
        log.warning("webhook %s: refused: %s", path, problem)
        return jsonify({"status": 401, "detail": problem}), 401
    delivery = request.headers.get(DELIVERY) or "sha256:" + hashlib.sha256(body).hexdigest()
    [outcome] = store.record_messages(watcher.key, [(delivery, body)], now())
    if outcome == "event":
        wake_scheduler()  # its consuming runs start now, not at the scheduler's next poll
        return jsonify({"status": "accepted", "delivery": delivery}), 202
    if outcome == "duplicate":
        return jsonify({"status": "duplicate", "delivery": delivery}), 200
    return jsonify({"status": 400, "detail": outcome}), 400
