"""Login and logout (needed beyond loopback, or everywhere with ``web_login=always``).

Wrong logins are counted in the database (``login_failures``) so every web process
sharing it sees the same count, and judged two ways (issue 24 item 9):

- per (user name, client address) pair: after ``web_login_max_failures`` wrong logins
  of that pair within ``web_login_window_seconds``, logins of that pair answer 429
  with ``Retry-After`` without checking the password until the window has passed. The
  same name from another address, and other names from that address, are not refused:
  nobody can lock a user out from elsewhere.
- per client address: past ``web_login_max_failures_per_address`` wrong logins (any
  names) in the window, every login from the address is slowed down before its
  password is checked, by :func:`login_delay` (0.5 s, doubling per further failure, at
  most :data:`MAX_DELAY` seconds); a right password still gets in, only later. At most
  :data:`SLOWED_AT_ONCE` slowed logins wait at once in a process (the rest get 429
  with ``Retry-After``), so slowed logins cannot take every server thread.

A successful login forgives that pair's failures only (an attacker's own good login
does not wipe the address's count). Each failure is logged (name and address, never
the password) and recorded as a ``login_failed`` event.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
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


FIRST_DELAY = 0.5  # seconds: the slowdown of the first login past the address's limit
MAX_DELAY = 8.0  # seconds: the slowdown never grows beyond this
SLOWED_AT_ONCE = 2  # slowed logins waiting at once in one web process (of its 8 threads)
SLEEP_KEY = "orchestrator_login_sleep"  # app.extensions: how a slowdown waits (tests: fake)
_SLOTS_KEY = "orchestrator_login_slots"


def login_delay(failures: int, limit: int) -> float:
    """Seconds a login waits from an address with ``failures`` wrong logins in the window:
    none below ``limit``, then 0.5 s doubling per further failure, capped at MAX_DELAY.

    >>> [login_delay(n, 20) for n in (0, 19, 20, 21, 22, 23, 24, 99)]
    [0.0, 0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    """
    if failures < limit:
        return 0.0
    return min(FIRST_DELAY * 2.0 ** min(failures - limit, 16), MAX_DELAY)


def _judge(username: str, address: str) -> tuple[int | None, float]:
    """(seconds until this pair may try again, or None; seconds to slow this login by)."""
    settings = get_settings()
    window = timedelta(seconds=settings.web_login_window_seconds)
    by_pair, by_address = get_store().login_failures(username, address, now() - window)
    if by_pair >= settings.web_login_max_failures:
        return math.ceil(window.total_seconds()), 0.0
    return None, login_delay(by_address, settings.web_login_max_failures_per_address)


def _slow_down(delay: float) -> bool:
    """Wait ``delay`` seconds holding one of the process's slowed-login slots; False (and
    no wait) when every slot is taken."""
    slots = current_app.extensions.setdefault(
        _SLOTS_KEY, threading.BoundedSemaphore(SLOWED_AT_ONCE)
    )
    if not slots.acquire(blocking=False):
        return False
    try:
        sleep: Callable[[float], None] = current_app.extensions.get(SLEEP_KEY, time.sleep)
        sleep(delay)
    finally:
        slots.release()
    return True


def _too_many(wait: int | float) -> Response:
    seconds = max(1, math.ceil(wait))
    body, code = _page(429, f"Too many failed logins: try again in {seconds} seconds.")
    return Response(body, code, {"Retry-After": str(seconds)}, mimetype="text/html")


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
    wait, delay = _judge(username, address)
    if wait is not None:
        log.warning(
            "web UI login as %r from %s refused: too many failed logins", username[:100], address
        )
        return _too_many(wait)
    if delay:
        log.warning("web UI login from %s slowed by %.1fs: many failed logins", address, delay)
        if not _slow_down(delay):
            return _too_many(delay)
    if store.check_password(username, request.form.get("password", "")):
        key = store.session_key(username)
        if key is not None:
            store.clear_login_failures(username, address)
            start_session(username, key)
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
