"""``GET /metrics``: Prometheus text format, read from the store at scrape time.

Every metric is documented in docs/observability.md.
"""

from __future__ import annotations

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST

from orchestrator.observability.metrics import render

from ..current import get_store, now

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def metrics() -> Response:
    return Response(render(get_store(), now()), mimetype=None, content_type=CONTENT_TYPE_LATEST)
