"""Issue 24 item 7: ``dag.http(timeout=)`` is a wall-clock deadline for the whole
exchange, and the body is streamed, read no further than ``max_result_bytes + 1``.
Against real local HTTP servers that trickle a body or send an endless one, through a
real task process, on both backends."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from test_http_tasks import _dag, _log, _run  # noqa: I001  (tests/integration/)


class RawServer:
    """A TCP server answering every connection with ``behaviour(conn)``, counting the
    body bytes it managed to send."""

    def __init__(self, behaviour) -> None:
        self.sent = 0
        self.header_bytes = 0  # of the slow headers, sent before the client hung up
        self.finished = threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.behaviour = behaviour
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)  # the request (small: a GET)
            self.behaviour(self, conn)
        except OSError:
            pass  # the client hung up: what the test wants
        finally:
            conn.close()
            self.finished.set()

    def close(self) -> None:
        self.sock.close()


def trickle(server: RawServer, conn: socket.socket) -> None:
    """200 OK with a 40-byte JSON body sent 2 bytes at a time, 0.25 s apart (5 s)."""
    body = b'"' + b"x" * 38 + b'"'
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body))  # fmt: skip
    for i in range(0, len(body), 2):
        conn.sendall(body[i : i + 2])
        server.sent += 2
        time.sleep(0.25)


def slow_headers(server: RawServer, conn: socket.socket) -> None:
    """The status line, then headers one byte every 0.2 s (about 8 s), never a body."""
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for byte in SLOW_HEADERS:
        conn.sendall(bytes([byte]))
        server.header_bytes += 1
        time.sleep(0.2)


SLOW_HEADERS = b"X-Slow: " + b"z" * 40 + b"\r\n\r\n"


def endless(server: RawServer, conn: socket.socket) -> None:
    """200 OK claiming 200 MB, sent as fast as the client reads."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                 b"Content-Length: 200000000\r\n\r\n")  # fmt: skip
    block = b"y" * 65536
    while server.sent < 200_000_000:
        conn.sendall(block)
        server.sent += len(block)


@pytest.fixture
def raw_server(request):
    made: list[RawServer] = []

    def make(behaviour) -> RawServer:
        made.append(RawServer(behaviour))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_a_trickling_body_fails_at_the_deadline_not_when_it_ends(harness, write_dag, raw_server):
    server = raw_server(trickle)
    url = f"http://127.0.0.1:{server.port}/slow"
    source = _dag(f'    dag.http("call", "{url}", timeout=timedelta(seconds=1))')
    run = _run(harness, write_dag, source)
    ti = harness.store.task_instance(run.run_id, "call")
    assert ti.state == "failed", ti.error  # main: it waited 5 s and succeeded
    assert "no complete response within 1 s (timeout" in ti.error
    assert server.sent < 40  # the client stopped reading before the body ended
    [tr] = harness.store.tries(run.run_id, "call")
    assert "response: HTTP" not in _log(harness, run.run_id, "call")
    assert tr.try_number == 1


def test_trickling_headers_fail_at_the_deadline_too(harness, write_dag, raw_server):
    server = raw_server(slow_headers)
    url = f"http://127.0.0.1:{server.port}/h"
    source = _dag(f'    dag.http("call", "{url}", timeout=timedelta(seconds=1))')
    run = _run(harness, write_dag, source)
    ti = harness.store.task_instance(run.run_id, "call")
    assert ti.state == "failed" and "no response within 1 s (timeout)" in ti.error
    # the connection was shut down: the server is cut off long before its 8 s, while it
    # still had headers to send (counted, not timed: a loaded machine may take a while
    # to record the try's end, and the server notices the hang-up on its next byte)
    assert server.finished.wait(5)
    assert server.header_bytes < len(SLOW_HEADERS) - 10, server.header_bytes
    assert server.sent == 0


def test_an_endless_body_is_not_read_past_the_limit(harness, write_dag, raw_server):
    server = raw_server(endless)
    url = f"http://127.0.0.1:{server.port}/huge"
    source = _dag(f'    dag.http("call", "{url}", timeout=timedelta(seconds=30))')
    run = _run(harness, write_dag, source)
    ti = harness.store.task_instance(run.run_id, "call")
    assert ti.state == "failed"
    assert "over the 65536-byte limit (max_result_bytes); reading stopped at 65537" in ti.error
    assert server.finished.wait(10)  # the connection was dropped, not read to the end
    assert server.sent < 32_000_000  # main read all 200 MB into memory first
