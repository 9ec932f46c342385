"""The Flask application factory.

>>> app = create_app(Settings.load())        # doctest: +SKIP
>>> app.test_client().get("/health").json    # doctest: +SKIP
{'status': 'ok'}

Nothing lives in module globals: the store sits in ``app.extensions`` (see
:func:`get_store`), so a test builds exactly the app it needs.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response

from orchestrator.errors import NotFoundError
from orchestrator.settings import Settings
from orchestrator.store import Store
from webui import formatting
from webui.secret import load_or_create_secret

STORE_KEY = "orchestrator_store"

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def create_app(settings: Settings, store: Store | None = None) -> Flask:
    """Build the web UI for ``settings``; ``store`` defaults to one on settings.database_url.

    The secret key comes from ``<settings.state_dir>/webui_secret`` (created on first
    use). A store passed in stays the caller's to dispose of.
    """
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=load_or_create_secret(settings.state_dir),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions[STORE_KEY] = store if store is not None else Store(settings.database_url)
    app.extensions["orchestrator_settings"] = settings

    app.add_template_filter(formatting.in_zone, "in_zone")
    app.add_template_filter(formatting.utc, "utc")
    app.add_template_filter(formatting.iso, "iso")
    app.add_template_filter(formatting.state_class, "state_class")
    app.add_template_global(formatting.duration, "duration")

    from webui.views import api, health, pages

    app.register_blueprint(pages.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(health.bp)

    app.after_request(_security_headers)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(NotFoundError, _not_found)
    return app


def get_store() -> Store:
    """The store of the app handling the current request."""
    return current_app.extensions[STORE_KEY]


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
