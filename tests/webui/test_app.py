"""The app's set-up: secret key file, cookies, security headers, store ownership."""

from __future__ import annotations

import os
import re
import stat

import pytest

from orchestrator.errors import ConfigError
from orchestrator.store import Store
from webui import create_app
from webui.current import STORE_KEY
from webui.secret import SECRET_FILE, load_or_create_secret


@pytest.mark.parametrize(
    "path", ["/", "/import-errors", "/health", "/api/v1/dags", "/static/style.css", "/missing"]
)
def test_security_headers_on_every_response(client, path):
    response = client.get(path)
    response.close()  # static files are streamed from an open file
    csp = response.headers["Content-Security-Policy"]
    assert csp.startswith("default-src 'self'")
    assert "unsafe-inline" not in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_pages_need_no_inline_script_or_style(client, make_dag, make_runs):
    make_dag("etl", description="d", tags=["t"])
    make_runs("etl", ["success"])
    for path in ("/", "/dags/etl", "/import-errors", "/nope"):
        html = client.get(path).get_data(as_text=True)
        scripts = re.findall(r"<script[^>]*>", html)
        assert scripts == [
            '<script src="/static/theme.js">',  # dark mode, before the body is drawn
            '<script src="/static/app.js" defer>',
            '<script src="/static/graph_view.js" defer>',  # pan, zoom, groups (issue 27)
        ], path
        assert "style=" not in html and "<style" not in html


def test_static_css_is_served_locally(client):
    html = client.get("/").get_data(as_text=True)
    assert 'href="/static/style.css"' in html
    assert "//" not in html.split("<body>")[0].replace("http://", "").replace("https://", "")
    response = client.get("/static/style.css")
    assert response.status_code == 200
    assert "system-ui" in response.get_data(as_text=True)
    response.close()


def test_secret_key_file_is_created_private_and_reused(settings, store):
    path = os.path.join(settings.state_dir, SECRET_FILE)
    assert not os.path.exists(path)

    first = create_app(settings, store)

    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as f:
        key = f.read().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", key), key  # 32 random bytes, hex
    assert first.config["SECRET_KEY"] == key
    second = create_app(settings, store)
    assert second.config["SECRET_KEY"] == key
    assert [n for n in os.listdir(settings.state_dir) if n.endswith(".tmp")] == []


def test_session_cookies_are_httponly_and_samesite_lax(app):
    assert app.config["SESSION_COOKIE_HTTPONLY"] is True
    assert app.config["SESSION_COOKIE_SAMESITE"] == "Lax"


def test_a_world_readable_secret_file_is_made_private(tmp_path):
    key = load_or_create_secret(str(tmp_path))
    path = tmp_path / SECRET_FILE
    path.chmod(0o644)
    assert load_or_create_secret(str(tmp_path)) == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("content", ["", "secret", "zz" * 40])
def test_a_bad_secret_file_is_refused(tmp_path, content):
    path = tmp_path / SECRET_FILE
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(ConfigError, match=SECRET_FILE):
        load_or_create_secret(str(tmp_path))


def test_the_store_is_built_from_settings_when_not_given(settings, make_dag):
    make_dag("etl")
    app = create_app(settings)
    own = app.extensions[STORE_KEY]
    try:
        assert isinstance(own, Store)
        assert own.url == settings.database_url
        body = app.test_client().get("/api/v1/dags").get_json()
        assert [d["dag_id"] for d in body["dags"]] == ["etl"]
    finally:
        own.dispose()


def test_a_given_store_is_used(app, store):
    assert app.extensions[STORE_KEY] is store
