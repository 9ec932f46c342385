"""A live web server for tests: ``webui.server.serve`` (waitress) on a free loopback
port in a thread, so requests go through real HTTP, real headers and real cookies."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask

from webui.server import serve


@contextmanager
def live_server(app: Flask) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT``) of ``app`` served until the block ends."""
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
        assert ready.wait(20), "the web server did not start"
        yield urls[0]
    finally:
        stop.set()
        thread.join(20)
    assert not thread.is_alive()
