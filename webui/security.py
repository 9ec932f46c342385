"""Login and CSRF checks run before every request.

- Login: required when the app is bound beyond loopback (``LOGIN_REQUIRED``); every
  route except ``/health``, ``/login`` and static files needs a signed-in session.
- CSRF: one random token per session, sent back in a hidden ``csrf_token`` field or
  an ``X-CSRF-Token`` header; every non-GET request without the right one is refused
  with 400, before the view runs.

>>> app.before_request(check_request)     # doctest: +SKIP
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from typing import Any

from flask import abort, current_app, jsonify, redirect, request, session, url_for

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PUBLIC_ENDPOINTS = frozenset({"health.health", "auth.login", "static"})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def csrf_token() -> str:
    """This session's CSRF token (made on first use)."""
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(32)
    return token


def _scraper_token_ok() -> bool:
    """Prometheus cannot log in: a configured bearer token opens /metrics alone."""
    expected = current_app.config.get("METRICS_TOKEN")
    sent = request.headers.get("Authorization", "")
    if not expected or not sent.startswith("Bearer "):
        return False
    return hmac.compare_digest(sent[len("Bearer ") :].encode(), expected.encode())


def current_user() -> str | None:
    return session.get("user")


def check_request() -> Any:
    needs_login = (
        current_app.config.get("LOGIN_REQUIRED") and request.endpoint not in PUBLIC_ENDPOINTS
    )
    if needs_login and request.endpoint == "metrics.metrics" and _scraper_token_ok():
        needs_login = False
    if needs_login and not current_user():
        if request.path.startswith("/api/"):
            body = {"status": 401, "title": "Unauthorized", "detail": "log in first"}
            return jsonify(body), 401
        return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))
    if request.method not in SAFE_METHODS:
        sent = request.headers.get("X-CSRF-Token") or request.form.get("csrf_token") or ""
        expected = session.get("csrf") or ""
        if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
            abort(400, "missing or wrong CSRF token: reload the page and try again")
    return None
