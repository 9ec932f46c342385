"""The Flask application factory.

>>> app = create_app(Settings.load())        # doctest: +SKIP
>>> app.test_client().get("/health").json["status"]  # doctest: +SKIP
'ok'

Nothing lives in module globals: the store sits in ``app.extensions`` (see
:func:`get_store`), so a test builds exactly the app it needs.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, jsonify, make_response, render_template, request
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response

from orchestrator.clock import Clock, SystemClock
from orchestrator.engine.settings_secrets import settings_masker
from orchestrator.errors import ConfigError, NotFoundError, StateError
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import bounded_wait_ended
from orchestrator.store.core.identity import DatabaseGoneError

from . import formatting, log_view, render, tracebacks
from .current import (
    CLOCK_KEY,
    LAYOUTS_KEY,
    LOG_MASK_KEY,
    SETTINGS_KEY,
    STORE_KEY,
    WAKE_SCHEDULER_KEY,
    now,
)
from .data import GRID_RUNS
from .gantt_svg import gantt_svg
from .inputs import PathInt
from .layouts import Layouts
from .markdown import doc_html
from .roles import current_role, may
from .secret import load_or_create_secret
from .security import (
    SessionInterface,
    allowed_hosts,
    check_request,
    csrf_token,
    current_user,
    is_loopback,
)

log = logging.getLogger(__name__)

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


class _NotifySchedulers:
    """``set()`` NOTIFYs the schedulers listening on PostgreSQL (a no-op on SQLite)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def set(self) -> None:
        from orchestrator.engine.wakeup import FINISHED

        try:
            self.store.notify(FINISHED)
        except Exception as exc:  # noqa: BLE001 - a lost wakeup costs one scheduler poll
            log.warning("could not wake the schedulers: %s", str(exc).splitlines()[0])


def create_app(
    settings: Settings,
    store: Store | None = None,
    *,
    clock: Clock | None = None,
    login_required: bool | None = None,
    wake_scheduler: Any = None,
) -> Flask:
    """Build the web UI for ``settings``; ``store`` defaults to one on settings.database_url.

    ``wake_scheduler`` (anything with ``set()``) is set when a webhook records an asset
    event, so the scheduler starts the consuming runs at once instead of at its next
    poll; by default a PostgreSQL NOTIFY to the schedulers listening (a no-op on SQLite,
    where ``standalone`` passes its scheduler's in-process event).

    The secret key comes from ``<settings.state_dir>/webui_secret`` (created on first
    use). A store passed in stays the caller's to dispose of. A login is required
    when ``settings.web_host`` is not a loopback address or ``settings.web_login`` is
    ``always`` (``login_required`` overrides that, for tests).
    """
    _check_web_settings(settings)
    app = Flask(__name__)
    app.url_map.converters["int"] = PathInt  # before any route: every <int:...> is bounded
    app.config.update(
        SECRET_KEY=load_or_create_secret(settings.state_dir, settings.web_secret_file),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        COOKIE_SECURE_MODE=settings.web_secure_cookie,
        ALLOWED_HOSTS=allowed_hosts(settings),
        # request bodies beyond this are refused with 413 before anything parses them
        MAX_CONTENT_LENGTH=settings.web_max_body_bytes,
        MAX_FORM_MEMORY_SIZE=settings.web_max_body_bytes,
        TRUSTED_PROXY=settings.web_trusted_proxy,  # read by webui.server.serve
    )
    app.session_interface = SessionInterface()
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions[STORE_KEY] = (
        store if store is not None else Store(settings.database_url, settings=settings)
    )
    app.extensions[SETTINGS_KEY] = settings
    app.extensions[CLOCK_KEY] = clock or SystemClock()
    app.extensions[LAYOUTS_KEY] = Layouts()
    app.extensions[WAKE_SCHEDULER_KEY] = wake_scheduler or _NotifySchedulers(
        app.extensions[STORE_KEY]
    )
    masker = settings_masker(settings)  # issue 24: the settings' secrets, in try logs
    app.extensions[LOG_MASK_KEY] = masker.mask if masker else None
    if login_required is None:
        login_required = settings.web_login == "always" or not is_loopback(settings.web_host)
    app.config["LOGIN_REQUIRED"] = login_required
    app.config["METRICS_TOKEN"] = settings.metrics_token

    app.add_template_filter(doc_html, "doc_html")  # doc_md as safe HTML (issue 25)
    app.add_template_filter(formatting.in_zone, "in_zone")
    app.add_template_filter(formatting.utc, "utc")
    app.add_template_filter(formatting.iso, "iso")
    app.add_template_filter(formatting.state_class, "state_class")
    app.add_template_filter(formatting.stamps, "stamps")
    app.add_template_global(formatting.duration, "duration")
    app.add_template_global(formatting.seconds_text, "seconds_text")
    app.add_template_global(formatting.time_tag, "time_tag")
    app.add_template_global(formatting.bytes_text, "bytes_text")
    app.add_template_global(tracebacks.trim, "shown_error")
    app.add_template_global(log_view.render_lines, "log_lines")
    app.add_template_global(_ago, "ago")
    app.add_template_global(csrf_token, "csrf_token")
    app.add_template_global(current_user, "current_user")
    app.add_template_global(may, "may")
    app.add_template_global(current_role, "current_role")
    app.add_template_global(render.grid_rows, "grid_rows")
    app.add_template_global(render.task_href, "task_href")
    app.add_template_global(render.task_rows, "task_rows")
    app.add_template_global(gantt_svg, "gantt_svg")
    app.add_template_global(GRID_RUNS, "grid_runs_max")

    from .views import (
        actions,
        api,
        api_actions,
        api_users,
        auth,
        dags,
        events,
        health,
        metrics,
        runs,
    )

    views = (dags, runs, events, actions, auth, api, api_actions, api_users, health, metrics)
    for module in views:
        app.register_blueprint(module.bp)
    from .views import versions  # issue 17: DAG versions, pages and API

    app.register_blueprint(versions.bp)
    app.register_blueprint(versions.api_bp)
    from .views import api_credentials, credentials  # issue 16: variables and connections

    app.register_blueprint(credentials.bp)
    app.register_blueprint(api_credentials.bp)
    from .views import assets  # issue 15: the assets pages and API

    app.register_blueprint(assets.bp)
    from .views import calendar  # issue 27 item 8: a DAG's year of daily outcomes

    app.register_blueprint(calendar.bp)
    from .views import watchers  # issue 30: asset watchers, deferred tasks, webhooks

    app.register_blueprint(watchers.bp)

    app.before_request(check_request)
    app.after_request(_security_headers)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(NotFoundError, _not_found)
    app.register_error_handler(StateError, _conflict)
    app.register_error_handler(ConfigError, _bad_request)
    app.register_error_handler(DatabaseGoneError, _database_gone)
    app.register_error_handler(OperationalError, _database_unavailable)
    return app


def _ago(value: Any, timezone: str = "UTC") -> Any:
    """``3 min ago`` by the app's clock, the full time on hover (formatting.ago_tag)."""
    return formatting.ago_tag(value, now(), timezone)


def _check_web_settings(settings: Settings) -> None:
    for name, allowed in (
        ("web_login", ("auto", "always")),
        ("web_secure_cookie", ("auto", "always", "never")),
    ):
        value = getattr(settings, name)
        if value not in allowed:
            raise ConfigError(
                f"ORCHESTRATOR_{name.upper()}: expected one of {', '.join(allowed)}, got {value!r}"
            )


def _security_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _wants_json() -> bool:
    return request.path.startswith("/api/")


def _error(code: int, title: str, message: str) -> Any:
    if _wants_json():
        return jsonify({"status": code, "title": title, "detail": message}), code
    return render_template("error.html", code=code, title=title, message=message), code


def _http_error(exc: HTTPException) -> Any:
    code = exc.code or 500
    return _error(code, exc.name, exc.description or exc.name)


def _not_found(exc: NotFoundError) -> Any:
    return _error(404, "Not Found", str(exc))


def _conflict(exc: StateError) -> Any:
    return _error(409, "Conflict", str(exc))


def _bad_request(exc: ConfigError) -> Any:
    return _error(400, "Bad Request", str(exc))


def _database_unavailable(exc: OperationalError) -> Any:
    """A lock wait that ran out (another session holds the row: PostgreSQL's
    ``lock_timeout``, SQLite's busy timeout) or a database that cannot be reached:
    503 with ``Retry-After``, not a 500. The transaction was rolled back."""
    first = str(exc.orig if exc.orig is not None else exc).splitlines()[0][:300]
    if bounded_wait_ended(exc) or "database is locked" in first:
        message = (
            "the database is busy: a lock another session holds was not released in "
            "time. Nothing was changed; try again."
        )
    else:
        message = "the database cannot be reached; nothing was changed (see the server log)"
    log.warning("%s %s: database unavailable: %s", request.method, request.path, first)
    response = make_response(_error(503, "Service Unavailable", message))
    response.headers["Retry-After"] = "1"
    return response


def _database_gone(exc: DatabaseGoneError) -> Any:
    message = "the database was deleted or replaced while in use; nothing more is written"
    return _error(503, "Service Unavailable", message + " (see the server log)")
