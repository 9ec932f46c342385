"""Checks run before every request: Host, cross-site, session, login and CSRF.

In this order (each refusal happens before the view runs, so it changes nothing):

- Host: the ``Host`` header must name this UI: ``127.0.0.1``, ``localhost`` or
  ``[::1]`` (any port), ``web_host`` when it is a specific address, or one of
  ``web_allowed_hosts``; anything else is 400 (Django's ``ALLOWED_HOSTS``). A page on
  another site that re-points its own name at 127.0.0.1 (DNS rebinding) reaches
  the UI with its own name in ``Host`` and is refused. ``/health`` is exempt (probes
  connect by IP), and so is ``/metrics`` with the right scraper token.
- No NUL character in the path, the query or a form (PostgreSQL cannot hold one): 400.
- Cross-site: a state change (any method but GET, HEAD, OPTIONS) whose ``Origin``,
  ``Referer`` or ``Sec-Fetch-Site`` says it comes from another origin is refused with
  403 even with a valid CSRF token (Django's CSRF origin check).
- Session: a signed-in session carries its user's session key (the user row's random
  nonce and its ``session_version``), the time it started and the time it was last
  used; a changed key (logout, password change, deleted user, even one added again
  under the same name), more than ``web_session_idle_seconds`` of idleness or more
  than ``web_session_max_seconds`` since the login ends it.
- Login: required when ``LOGIN_REQUIRED`` (beyond loopback, or ``web_login=always``);
  every route except ``/health``, ``/login`` and static files needs a signed-in session.
- CSRF: one random token per session, sent back in a hidden ``csrf_token`` field or
  an ``X-CSRF-Token`` header; every non-GET request without the right one is 400.
- Role: the caller's role must reach the route's entry in ``webui.roles.ROUTE_ROLES``
  (403 otherwise, and for a route without an entry).

A request with ``Authorization: Bearer <token>`` (an API token, see
``orchestrator.store.access.token_store``) skips the cross-site, session, login and CSRF
steps: a token is no ambient credential a browser sends on its own, so another site
cannot make a browser use it. It acts with the token's role and no more, whatever
the session cookie or loopback would allow; a token that is unknown, malformed,
expired or revoked is 401 with the reason, on every route.

>>> app.before_request(check_request)     # doctest: +SKIP
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from flask import abort, current_app, jsonify, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface

from orchestrator.settings import Settings

from .current import get_settings, get_store, now
from .roles import Principal, principal, refusal, set_principal

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PUBLIC_ENDPOINTS = frozenset({"health.health", "auth.login", "static", "watchers.webhook"})
# issue 30: machine-to-machine POSTs that prove themselves with a signature the view
# checks (no session, so no CSRF token and no Origin to judge)
SIGNED_ENDPOINTS = frozenset({"watchers.webhook"})
HOST_EXEMPT_ENDPOINTS = frozenset({"health.health"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
# Django's host_validation_re: a DNS name or IPv4 address, or a bracketed IPv6 one,
# then an optional port.
_HOST = re.compile(r"([a-z0-9.-]+|\[[a-f0-9]*:[a-f0-9.:]+\])(?::([0-9]{1,5}))?")
_SEEN_EVERY = 60  # seconds: how stale the session's "last used" may get before rewriting it


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(settings: Settings) -> frozenset[str]:
    """The host names (lower case, no port) the UI answers: see the module docstring."""
    names = set(LOOPBACK_NAMES)
    bind = settings.web_host.strip().lower()
    if bind not in WILDCARD_BINDS:
        names.add(f"[{bind.strip('[]')}]" if ":" in bind else bind)
    for name in (settings.web_allowed_hosts or "").split(","):
        if name.strip():
            names.add(name.strip().lower().removesuffix("."))
    return frozenset(names)


def split_host(value: str) -> tuple[str, int | None] | None:
    """``("example.com", 8080)`` from ``"Example.com.:8080"``; None if malformed.

    ASCII only: a browser sends an IDN in its punycode form, and ``lower()`` turns some
    other characters into ASCII letters (KELVIN SIGN into ``k``)."""
    if not value.isascii():
        return None
    match = _HOST.fullmatch(value.lower())
    if match is None:
        return None
    name, port = match.group(1), match.group(2)
    if port is not None and not 0 < int(port) < 65536:
        return None
    return name.removesuffix("."), int(port) if port else None


def host_allowed(value: str, allowed: frozenset[str]) -> bool:
    """True if the Host header ``value`` names one of ``allowed`` (any port)."""
    parsed = split_host(value)
    if parsed is None:
        return False
    name = parsed[0]
    # Django's rule: ".example.com" matches example.com and every subdomain of it
    return any(
        name == a or (a.startswith(".") and (name.endswith(a) or name == a[1:])) for a in allowed
    )


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed cookie session, with the ``Secure`` flag chosen per request.

    ``web_secure_cookie=auto`` marks the cookie ``Secure`` when the request came over
    HTTPS, which behind a reverse proxy is what the trusted proxy's
    ``X-Forwarded-Proto`` says (waitress believes it only from ``web_trusted_proxy``).
    """

    def get_cookie_secure(self, app: Any) -> bool:
        mode = app.config.get("COOKIE_SECURE_MODE", "auto")
        if mode == "auto":
            return request.is_secure
        return mode == "always"


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


def start_session(username: str, key: str) -> None:
    """A fresh session (and CSRF token) for a user who just signed in; ``key`` is
    ``store.session_key(username)``."""
    at = int(now().timestamp())
    session.clear()
    session["user"] = username
    session["sk"] = key
    session["since"] = at
    session["seen"] = at


def _host_ok() -> bool:
    if request.endpoint in HOST_EXEMPT_ENDPOINTS:
        return True
    if request.endpoint == "metrics.metrics" and _scraper_token_ok():
        return True  # Prometheus scrapes by whatever name its target has; the token suffices
    value = request.environ.get("HTTP_HOST")
    if value is None:  # HTTP/1.0 without Host: the server's own address
        value = request.host
    return host_allowed(value, current_app.config["ALLOWED_HOSTS"])


def _has_nul() -> str | None:
    if "\x00" in request.path:
        return "the path"
    for key, value in request.args.items(multi=True):
        if "\x00" in key or "\x00" in value:
            return "the query"
    if request.method not in SAFE_METHODS:
        for key, value in request.form.items(multi=True):
            if "\x00" in key or "\x00" in value:
                return "the form"
    return None


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower().removesuffix("."), port or _default_port(scheme)


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _own_origin() -> tuple[str, str, int] | None:
    parsed = split_host(request.environ.get("HTTP_HOST") or request.host)
    if parsed is None:
        return None
    name, port = parsed
    return request.scheme, name.strip("[]"), port or _default_port(request.scheme)


def cross_site_reason() -> str | None:
    """Why this request looks like it comes from another site, or None.

    ``Sec-Fetch-Site`` other than ``same-origin``/``none``, an ``Origin`` (``null``
    included) or else a ``Referer`` naming another scheme, host or port. A request
    carrying none of them (curl, scripts) is judged by its CSRF token alone.
    """
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None and fetch_site.lower() not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {fetch_site!r}"
    own = _own_origin()
    origin = request.headers.get("Origin")
    if origin is not None:
        if _origin(origin) is None or _origin(origin) != own:
            return f"Origin {origin[:100]!r} is not this site"
        return None
    referer = request.headers.get("Referer")
    if referer is not None and (_origin(referer) is None or _origin(referer) != own):
        return "Referer is not this site"
    return None


def _check_session() -> str | None:
    """End a signed-in session whose user logged out, changed password, went, idled or
    outlived the absolute lifetime; the role of a session that goes on (None without one)."""
    user = session.get("user")
    if user is None:
        return None
    found = get_store().session_of(user)
    at = int(now().timestamp())
    idle = at - int(session.get("seen", 0))
    age = at - int(session.get("since", 0))
    settings = get_settings()
    sent = session.get("sk")
    if (
        found is None
        or not found[0]
        or not isinstance(sent, str)
        or not hmac.compare_digest(found[0].encode(), sent.encode())
        or idle > settings.web_session_idle_seconds
        or age > settings.web_session_max_seconds
    ):
        session.clear()
        return None
    if idle >= _SEEN_EVERY:
        session["seen"] = at
    return found[1]


def _bearer() -> str | None:
    """The token of an ``Authorization: Bearer`` header (scheme in any case), or None."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def _unauthorized(detail: str) -> Any:
    body = {"status": 401, "title": "Unauthorized", "detail": detail}
    # RFC 6750: the reason travels in the header too
    quoted = detail.replace("\\", "").replace('"', "'")
    challenge = f'Bearer error="invalid_token", error_description="{quoted}"'
    return jsonify(body), 401, {"WWW-Authenticate": challenge}


def _forbidden(detail: str) -> Any:
    if request.path.startswith("/api/") or _bearer() is not None:
        return jsonify({"status": 403, "title": "Forbidden", "detail": detail}), 403
    abort(403, detail)


def _check_token(token: str) -> Any:
    auth = get_store().authenticate_token(token, now())
    if auth.refused is not None:
        return _unauthorized(auth.refused)
    set_principal(Principal(auth.username, auth.role or "viewer", "token", auth.actor))
    reason = refusal(request.endpoint)
    return _forbidden(reason) if reason else None


def current_actor(channel: str) -> str:
    """Who the current request acts as, for the runs and events it makes (``web:ada``,
    ``api:ada/token:ci``, ``web:anonymous@127.0.0.1``)."""
    who = principal()
    if who is None:
        return f"{channel}:anonymous@{request.remote_addr or 'unknown'}"
    return who.actor(channel)


def check_request() -> Any:
    if not _host_ok():
        abort(400, "this web UI does not answer to that Host name (see web_allowed_hosts)")
    where = _has_nul()
    if where:
        abort(400, f"a NUL character in {where} is not allowed")
    if request.endpoint in SIGNED_ENDPOINTS:
        set_principal(Principal(None, "public", "signature"))
        return None
    token = _bearer()
    if token is not None and not (request.endpoint == "metrics.metrics" and _scraper_token_ok()):
        return _check_token(token)
    unsafe = request.method not in SAFE_METHODS
    if unsafe:
        reason = cross_site_reason()
        if reason:
            abort(403, f"cross-site request refused: {reason}")
    role = _check_session()
    login_required = current_app.config.get("LOGIN_REQUIRED")
    needs_login = login_required and request.endpoint not in PUBLIC_ENDPOINTS
    scraper = request.endpoint == "metrics.metrics" and _scraper_token_ok()
    if needs_login and scraper:
        needs_login = False
    if needs_login and not current_user():
        if request.path.startswith("/api/"):
            body = {"status": 401, "title": "Unauthorized", "detail": "log in first"}
            return jsonify(body), 401
        return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))
    if unsafe:
        sent = request.headers.get("X-CSRF-Token") or request.form.get("csrf_token") or ""
        expected = session.get("csrf") or ""
        if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
            abort(400, "missing or wrong CSRF token: reload the page and try again")
    if role is not None:
        set_principal(Principal(current_user(), role, "session"))
    elif not login_required:
        set_principal(Principal(None, "admin", "loopback"))  # nobody to ask on loopback
    if scraper:
        return None
    reason = refusal(request.endpoint)
    return _forbidden(reason) if reason else None
