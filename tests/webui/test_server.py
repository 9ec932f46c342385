"""webui.server: loopback without login, anything else only with logins; stoppable."""

from __future__ import annotations

import http.client
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


class Served:
    """The app served by waitress on a free loopback port, for real HTTP requests."""

    def __init__(self, app) -> None:
        self.stop = threading.Event()
        ready = threading.Event()
        self.urls: list[str] = []

        def on_ready(url: str) -> None:
            self.urls.append(url)
            ready.set()

        self.thread = threading.Thread(
            target=serve, args=(app, "127.0.0.1", 0, self.stop), kwargs={"on_ready": on_ready}
        )
        self.thread.start()
        assert ready.wait(10)
        self.port = int(self.urls[0].rsplit(":", 1)[1])

    def request(self, method: str, path: str, headers: dict[str, str], body: bytes = b""):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            conn.endheaders(body or None)
            response = conn.getresponse()
            self.headers = response.headers
            return response.status, response.read()
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


@pytest.fixture
def served(app):
    s = Served(app)
    yield s
    s.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_real_server_refuses_foreign_hosts(served):
    """DNS rebinding: the browser sends the attacker's name, which resolves to us."""
    p = served.port
    for host in (
        f"evil.example:{p}",
        f"EVIL.EXAMPLE:{p}",
        f"127.0.0.1.evil.example:{p}",
        "127.0.0.1.evil.example",
        f"localhost.evil.example:{p}",
        "127.0.0.1:99999",
        f"127.0.0.1:{p}:{p}",
        f"127.0.0.1:{p}@evil.example",
        f"[::1].evil.example:{p}",
        "",
    ):
        status, body = served.request("GET", "/api/v1/dags", {"Host": host})
        assert status == 400, host
        assert b"Host" in body
    for host in (f"127.0.0.1:{p}", f"LOCALHOST:{p}", f"[::1]:{p}", "localhost"):
        status, _ = served.request("GET", "/api/v1/dags", {"Host": host})
        assert status == 200, host


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_real_server_refuses_a_huge_body_before_reading_it(settings, store):
    store.add_user("ada", "long enough password", START)
    app = create_app(settings.with_(web_max_body_bytes=1000), store, login_required=True)
    s = Served(app)
    try:
        headers = {
            "Host": f"127.0.0.1:{s.port}",
            "Content-Type": "application/x-www-form-urlencoded",
            "Content-Length": str(50 * 1024 * 1024),  # announced; only a little is sent
        }
        status, _ = s.request("POST", "/login", headers, b"username=ada&password=x")
        assert status == 413
    finally:
        s.close()


def test_login_on_loopback_too_needs_a_user(settings, store):
    app = create_app(settings.with_(web_login="always"), store)
    with pytest.raises(ConfigError, match="orchestrator users add"):
        check_bind(app, "127.0.0.1")
    store.add_user("ada", "long enough password", START)
    check_bind(app, "127.0.0.1")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("trusted", [True, False])
def test_secure_cookie_behind_a_trusted_tls_proxy(settings, store, trusted):
    proxy = "127.0.0.1" if trusted else None
    app = create_app(settings.with_(web_trusted_proxy=proxy), store)
    s = Served(app)
    try:
        headers = {
            "Host": "127.0.0.1",
            "X-Forwarded-Proto": "https",
            "X-Forwarded-Host": "localhost",
        }
        status, _ = s.request("GET", "/api/v1/csrf", headers)
        assert status == 200
        cookie = s.headers["Set-Cookie"]
        assert ("; Secure" in cookie) is trusted  # an untrusted peer's header is dropped
    finally:
        s.close()
