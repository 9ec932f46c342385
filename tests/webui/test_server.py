"""webui.server: loopback without login, anything else only with logins; stoppable."""

from __future__ import annotations

import json
import threading
import urllib.request
from datetime import UTC, datetime

import pytest

from orchestrator.errors import ConfigError
from webui import create_app
from webui.security import is_loopback
from webui.server import check_bind, serve

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_hosts_need_no_login(host, app):
    assert is_loopback(host)
    check_bind(app, host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_other_hosts_are_refused_without_login(host, app):
    assert not is_loopback(host)
    with pytest.raises(ConfigError, match=f"binding the web UI to {host} requires a login"):
        check_bind(app, host)


def test_a_public_host_turns_the_login_on(settings, store):
    assert create_app(settings.with_(web_host="0.0.0.0"), store).config["LOGIN_REQUIRED"]
    assert not create_app(settings, store).config["LOGIN_REQUIRED"]


def test_serve_refuses_a_public_host_without_any_user(settings, store):
    app = create_app(settings.with_(web_host="0.0.0.0"), store)
    with pytest.raises(ConfigError, match="orchestrator users add"):
        serve(app, "0.0.0.0", 0)


def test_serve_refuses_a_public_host_before_binding(app):
    with pytest.raises(ConfigError, match="use 127.0.0.1"):
        serve(app, "0.0.0.0", 0)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_public_host_with_a_user_is_served(settings, store):
    store.add_user("ada", "long enough password", START)
    app = create_app(settings.with_(web_host="0.0.0.0"), store)
    check_bind(app, "0.0.0.0")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_serve_answers_and_stops_when_told(app, live_cluster):
    stop = threading.Event()
    ready = threading.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    thread = threading.Thread(
        target=serve, args=(app, "127.0.0.1", 0, stop), kwargs={"on_ready": on_ready}
    )
    thread.start()
    try:
        assert ready.wait(10)
        with urllib.request.urlopen(urls[0] + "/health", timeout=10) as response:
            assert response.status == 200
            assert response.headers["X-Frame-Options"] == "DENY"
            assert json.loads(response.read())["status"] == "ok"
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
