"""Serve the web UI with waitress, stoppable from another thread.

>>> stop = threading.Event()                                            # doctest: +SKIP
>>> t = threading.Thread(target=serve, args=(app, "127.0.0.1", 8080, stop))  # doctest: +SKIP
>>> t.start(); ...; stop.set(); t.join()                                # doctest: +SKIP

Bound to a loopback address the UI needs no login; bound to any other address it
requires one (the app must have ``LOGIN_REQUIRED`` set and at least one user), and
refuses to start otherwise.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from waitress import create_server, wasyncore

from orchestrator.engine.start_environ import hide_start_environment
from orchestrator.errors import ConfigError

from .security import is_loopback

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2  # how soon a set stop_event is noticed at the latest
# Young-generation collections every this many net allocations instead of CPython's 700.
# A wide run page allocates a few hundred thousand objects, each of them freed by its
# reference count; at 700 the collector ran hundreds of times per page, each pass
# ageing the page's objects towards the full collections that walk every object the
# process holds (its cached DAG versions and layouts). Measured on a 10,000-task run
# page: 374 ms of CPU per page with the defaults, 261 ms with this (bench/ui_pages.py).
GC_YOUNG_THRESHOLD = 50_000
# How long a thread holding the interpreter lock runs before one waiting for it may take
# it (CPython's default: 5 ms). A probe or a poll waits for the lock at each of its few
# I/O steps while page renders keep it busy; at 1 ms, /health's p95 beside four open
# 10,000-task pages fell from 46 to 21 ms (SQLite) and from 58 to 34 ms (PostgreSQL).
SWITCH_INTERVAL = 0.001


def check_bind(app: Any, host: str) -> None:
    """Raise :class:`ConfigError` unless ``app`` may be served on ``host``.

    Loopback (127.0.0.1, ::1, localhost) is fine without a login. Any other address
    needs an app that requires a login, and an app that requires one (on any address,
    ``web_login=always``) needs a store with at least one user in it.
    """
    config = getattr(app, "config", {})
    if is_loopback(host) and not config.get("LOGIN_REQUIRED"):
        return
    if not config.get("LOGIN_REQUIRED"):
        raise ConfigError(
            f"binding the web UI to {host} requires a login; build the app with "
            "login_required=True (ORCHESTRATOR_WEB_HOST does) or use 127.0.0.1"
        )
    store = getattr(app, "extensions", {}).get("orchestrator_store")
    if store is None or store.count_users() == 0:
        raise ConfigError(
            f"the web UI on {host} requires a login, and there is no user yet: "
            "create one with 'orchestrator users add NAME'"
        )


def serve(
    app: Callable[..., Any],
    host: str,
    port: int,
    stop_event: threading.Event | None = None,
    *,
    threads: int = 8,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` until ``stop_event`` is set (or forever).

    Blocks the calling thread. ``port=0`` picks a free port; ``on_ready`` is called
    with the base URL (``http://127.0.0.1:8080``) once the socket listens. Raises
    :class:`ConfigError` for a non-loopback ``host`` without logins (see
    :func:`check_bind`) and ``OSError`` if the port is
    taken. Everything is torn down in this thread, so stopping is thread-safe.

    Request bodies larger than the app's ``MAX_CONTENT_LENGTH`` are refused by
    waitress (413) before they are read in. ``X-Forwarded-For``, ``-Proto``, ``-Host``
    and ``-Port`` are believed only from the app's ``TRUSTED_PROXY``
    (``web_trusted_proxy``) and stripped from everyone else.
    """
    check_bind(app, host)
    hide_start_environment()  # /proc/<pid>/environ: the web secret, the database URL
    stop_event = stop_event or threading.Event()
    socket_map: dict[int, Any] = {}
    server = create_server(
        app,
        map=socket_map,
        host=host,
        port=port,
        threads=threads,
        ident="orchestrator",
        clear_untrusted_proxy_headers=True,
        **_limits(app),
    )
    tune_gc()
    url = _base_url(server)
    log.info("web UI listening on %s", url)
    if on_ready is not None:
        on_ready(url)
    try:
        while socket_map and not stop_event.is_set():
            wasyncore.loop(timeout=POLL_SECONDS, map=socket_map, count=1)
    finally:
        server.task_dispatcher.shutdown()
        wasyncore.close_all(socket_map)
        log.info("web UI on %s stopped", url)


def tune_gc() -> None:
    """Collect cycles less often in a serving process, and never walk what it has loaded
    so far (modules, the app, its store): ``gc.freeze()`` moves it out of the collector's
    generations; and hand the interpreter lock on every :data:`SWITCH_INTERVAL`. A
    threshold set higher or an interval set shorter already (by an embedding program)
    is kept."""
    young, *older = gc.get_threshold()
    if young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *older)
    gc.freeze()
    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)


def _limits(app: Any) -> dict[str, Any]:
    options: dict[str, Any] = {}
    config = getattr(app, "config", {})
    trusted_proxy = config.get("TRUSTED_PROXY")
    max_body = config.get("MAX_CONTENT_LENGTH")
    if max_body:
        options["max_request_body_size"] = max_body
    if trusted_proxy:
        options["trusted_proxy"] = trusted_proxy
        options["trusted_proxy_headers"] = {
            "x-forwarded-for",
            "x-forwarded-proto",
            "x-forwarded-host",
            "x-forwarded-port",
        }
    return options


def _base_url(server: Any) -> str:
    listen = getattr(server, "effective_listen", None)
    if listen:  # MultiSocketServer ("localhost" may mean 127.0.0.1 and ::1)
        host, port = listen[0][0], listen[0][1]
    else:
        host, port = server.effective_host, server.effective_port
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}:{port}"
