"""Login and logout (needed beyond loopback, or everywhere with ``web_login=always``).

Wrong logins are throttled per user name and per client address, counted in the
database (``login_failures``) so every web process sharing it sees the same count:
after ``web_login_max_failures`` wrong logins for a name, or
``web_login_max_failures_per_address`` from an address, within
``web_login_window_seconds``, logins for it answer 429 with ``Retry-After`` without
even checking the password (the right one included) until the window has passed.
Each failure is logged (name and address, never the password) and recorded as a
``login_failed`` event.
"""

from __future__ import annotations

import logging
import math
import re
from datetime import timedelta
from urllib.parse import urlsplit

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from werkzeug.wrappers import Response

from ..current import get_settings, get_store, now
from ..security import current_user, start_session

log = logging.getLogger(__name__)

bp = Blueprint("auth", __name__)

# a same-site path: printable ASCII without backslash, space or control characters
_PATH = re.compile(r"/[\x21-\x5b\x5d-\x7e]*")


def _safe_next(target: str | None) -> str:
    """Only same-site relative paths are followed after login; anything else goes to /.

    Browsers drop tabs and newlines inside URLs and read a backslash as a slash, so
    ``/\\t/evil.example`` would become ``//evil.example``: no whitespace, control
    character or backslash is allowed at all, and the path may not start with ``//``.
    """
    if target and _PATH.fullmatch(target) and not target.startswith("//"):
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc:
            return target
    return url_for("pages.dag_list")


def _client_address() -> str:
    # REMOTE_ADDR is the peer, or the client named by the trusted proxy (waitress)
    return request.remote_addr or "unknown"


def _throttled(username: str, address: str) -> int | None:
    """Seconds until a login for ``username`` from ``address`` is allowed again, or None."""
    settings = get_settings()
    window = timedelta(seconds=settings.web_login_window_seconds)
    by_user, by_address = get_store().login_failures(username, address, now() - window)
    if by_user >= settings.web_login_max_failures:
        return math.ceil(window.total_seconds())
    if by_address >= settings.web_login_max_failures_per_address:
        return math.ceil(window.total_seconds())
    return None


def _page(code: int, message: str) -> tuple[str, int]:
    flash(message, "error")
    return render_template("login.html", next=_safe_form_next()), code


def _safe_form_next() -> str:
    target = request.form.get("next", "")
    return target if _safe_next(target) == target else ""


@bp.route("/login", methods=["GET", "POST"])
def login() -> Response | tuple[str, int] | str:
    if request.method == "GET":
        target = request.args.get("next", "")
        return render_template("login.html", next=target if _safe_next(target) == target else "")
    store = get_store()
    username = request.form.get("username", "")
    address = _client_address()
    wait = _throttled(username, address)
    if wait is not None:
        log.warning(
            "web UI login as %r from %s refused: too many failed logins", username[:100], address
        )
        body, code = _page(429, f"Too many failed logins: try again in {wait} seconds.")
        return Response(body, code, {"Retry-After": str(wait)}, mimetype="text/html")
    if store.check_password(username, request.form.get("password", "")):
        version = store.session_version(username)
        if version is not None:
            store.clear_login_failures(username)
            start_session(username, version)
            log.info("web UI login as %r from %s", username, address)
            return redirect(_safe_next(request.form.get("next")))
    window = timedelta(seconds=get_settings().web_login_window_seconds)
    store.record_login_failure(username, address, now(), window=window)
    log.warning("failed web UI login as %r from %s", username[:100], address)
    return _page(401, "Wrong user name or password.")


@bp.post("/logout")
def logout() -> Response:
    user = current_user()
    if user is not None:
        get_store().end_sessions(user)  # a copy of this cookie stops working too
    session.clear()
    return redirect(url_for("auth.login"))
