"""webui.server: loopback only, and stoppable from another thread."""

from __future__ import annotations

import threading
import urllib.request

import pytest

from orchestrator.errors import ConfigError
from webui.server import check_loopback, serve


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_hosts_are_allowed(host):
    check_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_other_hosts_are_refused_until_there_is_a_login(host):
    with pytest.raises(ConfigError, match=f"binding the web UI to {host} requires a login"):
        check_loopback(host)


def test_serve_refuses_a_public_host_before_binding(app):
    with pytest.raises(ConfigError, match="use 127.0.0.1"):
        serve(app, "0.0.0.0", 0)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_serve_answers_and_stops_when_told(app):
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
            assert response.read() == b'{"status":"ok"}\n'
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
