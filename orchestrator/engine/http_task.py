"""Running an HTTP task's try inside a task process, with ``requests``.

The request is rendered by :mod:`orchestrator.authoring.http_request` (values are
percent- or JSON-encoded, never spliced into the URL's structure). The try's log gets
the request line (query values of secret-looking names shown as ``***``, header
values never) and the response's status and size. A status outside
``expect_status``, a timeout or a connection error fails the try with the reason; an
optional ``response_check(response)`` (or ``(response, ctx)``) decides success.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests

from orchestrator.authoring.http_request import (
    describe_statuses,
    loggable_url,
    render_request,
    status_expected,
)
from orchestrator.authoring.templating import TemplateRenderError

CHUNK = 64 * 1024  # bytes read from the body at a time


def run_http(
    spec: dict[str, Any],
    variables: dict[str, Any],
    logger: logging.Logger,
    *,
    max_result_bytes: int,
    response_check: Callable[..., Any] | None = None,
    ctx: Any = None,
    filters: dict[str, Callable[..., Any]] | None = None,
) -> dict[str, Any]:
    """One HTTP try: ``{"ok": True, "result": json}`` or ``{"ok": False, "error": ...}``.
    ``filters``: the DAG's ``user_defined_filters`` (its macros are in ``variables``)."""
    try:
        request = render_request(spec, variables, filters)
    except TemplateRenderError as exc:
        return _failed(logger, str(exc))
    logger.info("request: %s %s", request.method, loggable_url(request.url))
    if request.headers:
        logger.info("request headers: %s (values not logged)", ", ".join(request.headers))
    timeout = float(spec["timeout"])
    got = _exchange(request, timeout, max_result_bytes)
    if isinstance(got, str):
        return _failed(logger, got)
    response, body, over = got
    shown = (
        f"more than {max_result_bytes} bytes (not read further)" if over else f"{len(body)} bytes"
    )
    logger.info("response: HTTP %s %s, %s", response.status_code, response.reason, shown)
    if over:
        return _failed(
            logger,
            f"response body is over the {max_result_bytes}-byte limit (max_result_bytes); "
            f"reading stopped at {len(body)} bytes",
        )
    if response_check is None and not status_expected(spec, response.status_code):
        return _failed(
            logger,
            f"HTTP {response.status_code} {response.reason}: expected {describe_statuses(spec)}",
        )
    if response_check is not None:
        try:
            ok = (
                response_check(response, ctx)
                if _arity(response_check) > 1
                else response_check(response)
            )
        except Exception as exc:  # noqa: BLE001 - the user's check, reported as the try's error
            return _failed(logger, f"response_check raised {type(exc).__name__}: {exc}")
        if not ok:
            return _failed(
                logger, f"response_check returned {ok!r} for HTTP {response.status_code}"
            )
    try:
        value: Any = response.json() if body else None
    except ValueError:
        value = response.text
    result = None if value is None else json.dumps(value)
    if result is not None and len(result.encode()) > max_result_bytes:
        return _failed(
            logger,
            f"response body is {len(result.encode())} bytes as JSON, over the "
            f"{max_result_bytes}-byte limit (max_result_bytes)",
        )
    logger.info("succeeded")
    return {"ok": True, "result": result}


def _exchange(request: Any, timeout: float, limit: int) -> tuple[Any, bytes, bool] | str:
    """Send ``request`` and read its response within ``timeout`` seconds of wall-clock
    time for the whole exchange (connect, headers, body), the body streamed and read
    no further than ``limit + 1`` bytes: (response, body, over the limit) or the reason
    it failed. The exchange runs in a daemon thread; at the deadline its socket is shut
    down so the thread ends too."""
    deadline = time.monotonic() + timeout
    session, sockets = _tracked_session()
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            response = session.request(
                request.method,
                request.url,
                headers=request.headers,
                json=request.json,
                data=request.data if request.data is not None else request.content,
                timeout=timeout,
                allow_redirects=False,
                stream=True,
            )
            box["response"] = response
            chunks: list[bytes] = []
            size = 0
            while size <= limit:
                if time.monotonic() >= deadline:
                    box["late"] = True  # a server that trickles: the deadline ends it
                    break
                chunk = response.raw.read1(min(CHUNK, limit + 1 - size), decode_content=True)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            box["body"] = b"".join(chunks)
            box["over"] = size > limit
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            box["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=work, name="http-task", daemon=True)
    thread.start()
    finished = done.wait(max(deadline - time.monotonic(), 0.0))
    if not finished or box.get("late"):
        # read before the shutdown: a connection cut in the headers reads as their end,
        # and the request can then come back with a "response" a moment later
        had_response = "response" in box
        _abort(box.get("response"))
        for sock in sockets:  # before the headers came there is no response to abort
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        session.close()
        if not had_response:
            return f"no response within {timeout:g} s (timeout)"
        return f"no complete response within {timeout:g} s (timeout: the body was still coming)"
    session.close()
    error = box.get("error")
    if isinstance(error, requests.Timeout):
        return f"no response within {timeout:g} s (timeout)"
    if isinstance(error, requests.ConnectionError):
        return f"cannot connect to {urlsplit(request.url).netloc}: {_reason(error)}"
    if isinstance(error, requests.RequestException):
        return f"request failed: {_reason(error)}"
    if error is not None:
        return f"request failed: {type(error).__name__}: {error}"
    response = box["response"]
    response._content = box["body"]  # .content, .text and .json() read what was read
    response._content_consumed = True
    if box["over"]:
        _abort(response)
    else:
        response.close()
    return response, box["body"], box["over"]


def _tracked_session() -> tuple[requests.Session, list[socket.socket]]:
    """A session whose connections put their sockets in the list it returns as they
    connect, so a deadline can shut down one still waiting for its headers."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    sockets: list[socket.socket] = []

    class Tracked(HTTPConnection):
        def connect(self) -> None:
            super().connect()
            sockets.append(self.sock)

    class TrackedTLS(HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            sockets.append(self.sock)

    class Pool(HTTPConnectionPool):
        ConnectionCls = Tracked

    class TLSPool(HTTPSConnectionPool):
        ConnectionCls = TrackedTLS

    session = requests.Session()
    for adapter in session.adapters.values():
        classes = dict(adapter.poolmanager.pool_classes_by_scheme)
        classes.update(http=Pool, https=TLSPool)
        adapter.poolmanager.pool_classes_by_scheme = classes
    return session, sockets


def _abort(response: Any) -> None:
    """Shut the response's socket down (a blocked read in another thread then ends)."""
    conn = getattr(getattr(response, "raw", None), "_connection", None)
    sock = getattr(conn, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    if response is not None:
        response.close()


def _failed(logger: logging.Logger, message: str) -> dict[str, Any]:
    logger.error("failed: %s", message)
    return {"ok": False, "error": message, "exit_status": None}


def _reason(exc: Exception) -> str:
    text = str(exc.args[0] if exc.args else exc)
    found = re.search(r"\[Errno -?\d+\] ([^')\]]+)", text) or re.search(
        r"(Connection refused)", text
    )
    return found.group(1) if found else text[:200]


def _arity(fn: Callable[..., Any]) -> int:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
