"""Running an HTTP task's try inside a task process, with ``requests``.

The request is rendered by :mod:`orchestrator.authoring.http_request` (values are
percent- or JSON-encoded, never spliced into the URL's structure). The try's log gets
the request line (query values of secret-looking names shown as ``***``, header
values never) and the response's status and size. A status outside
``expect_status``, a timeout or a connection error fails the try with the reason; an
optional ``response_check(response)`` (or ``(response, ctx)``) decides success.
"""

from __future__ import annotations

import json
import logging
import re
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
    try:
        response = requests.request(
            request.method,
            request.url,
            headers=request.headers,
            json=request.json,
            data=request.data if request.data is not None else request.content,
            timeout=spec["timeout"],
            allow_redirects=False,
        )
    except requests.Timeout:
        return _failed(logger, f"no response within {spec['timeout']:g} s (timeout)")
    except requests.ConnectionError as exc:
        host = urlsplit(request.url).netloc
        return _failed(logger, f"cannot connect to {host}: {_reason(exc)}")
    except requests.RequestException as exc:
        return _failed(logger, f"request failed: {_reason(exc)}")
    body = response.content
    logger.info("response: HTTP %s %s, %d bytes", response.status_code, response.reason, len(body))
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
