"""orchestrator.client against a stub HTTP server that records what it is sent: the
request each method makes (emit_asset_event's route is built by another branch, so it
is checked here by shape), and how answers that are no API JSON become ClientError."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from orchestrator.client import Client, ClientError


class Stub(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, dict, object]] = []
    answer: tuple[int, bytes, str] = (200, b'{"message": "ok"}', "application/json")

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        Stub.seen.append((self.command, self.path, dict(self.headers), body))
        status, data, kind = Stub.answer
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _handle

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[str]:
    Stub.seen = []
    Stub.answer = (200, b'{"message": "ok"}', "application/json")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


def test_emit_asset_event_posts_the_uri_and_extra_with_the_token(stub):
    c = Client(stub, "orc_0123456789ab_secret", timeout=5)
    assert c.emit_asset_event("s3://bucket/daily.parquet", {"rows": 3}) == {"message": "ok"}
    [(method, path, headers, body)] = Stub.seen
    assert (method, path) == ("POST", "/api/v1/assets/events")
    assert body == {"uri": "s3://bucket/daily.parquet", "extra": {"rows": 3}}
    assert headers["Authorization"] == "Bearer orc_0123456789ab_secret"
    c.emit_asset_event("file:///x")
    assert Stub.seen[-1][3] == {"uri": "file:///x", "extra": {}}


def test_path_parts_are_quoted(stub):
    Stub.answer = (200, b'{"text": "", "offset": 0}', "application/json")
    Client(stub).log("etl/../x", "a b", 2, offset=10)
    assert Stub.seen[-1][1] == "/api/v1/runs/etl%2F..%2Fx/tasks/a%20b/tries/2/log?offset=10"


@pytest.mark.parametrize(
    ("answer", "status", "reason"),
    [
        ((502, b"<html>bad gateway</html>", "text/html"), 502, "Bad Gateway"),
        ((404, b'{"status": 404, "detail": "no DAG x"}', "application/json"), 404, "no DAG x"),
        ((200, b"not json", "text/plain"), 200, "GET /dags: the answer is not JSON"),
        ((302, b"", "text/html"), 302, "redirected to ?"),
    ],
)
def test_answers_that_are_no_api_json_raise_client_error(stub, answer, status, reason):
    Stub.answer = answer
    with pytest.raises(ClientError) as exc:
        Client(stub, timeout=5).list_dags()
    assert (exc.value.status, exc.value.reason) == (status, reason)


def test_a_naive_logical_date_is_refused_before_sending(stub):
    from datetime import datetime

    with pytest.raises(ClientError, match="timezone-aware"):
        Client(stub).trigger("etl", logical_date=datetime(2026, 1, 1))
    assert Stub.seen == []
