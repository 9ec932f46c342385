"""``GET /health``: 200 when the metadata database answers, 503 when it does not."""

from __future__ import annotations

import logging

from flask import Blueprint, jsonify
from werkzeug.wrappers import Response

from ..current import get_store
from ..queries import ping

log = logging.getLogger(__name__)

bp = Blueprint("health", __name__)


@bp.get("/health")
def health() -> tuple[Response, int]:
    try:
        ping(get_store())
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        log.warning("health check: the metadata database did not answer", exc_info=True)
        message = f"the metadata database did not answer ({type(exc).__name__})"
        return jsonify({"status": "error", "message": message}), 503
    return jsonify({"status": "ok"}), 200
