"""Serve the web UI with waitress, stoppable from another thread.

>>> stop = threading.Event()                                            # doctest: +SKIP
>>> t = threading.Thread(target=serve, args=(app, "127.0.0.1", 8080, stop))  # doctest: +SKIP
>>> t.start(); ...; stop.set(); t.join()                                # doctest: +SKIP

The web UI has no login yet, so it only binds to the loopback interface.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Callable
from typing import Any

from waitress import create_server, wasyncore

from orchestrator.errors import ConfigError

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2  # how soon a set stop_event is noticed at the latest


def check_loopback(host: str) -> None:
    """Raise :class:`ConfigError` unless ``host`` is a loopback address or localhost."""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return
    except ValueError:
        pass
    raise ConfigError(
        f"binding the web UI to {host} requires a login, which comes with the UI issue; "
        "use 127.0.0.1"
    )


def serve(
    app: Callable[..., Any],
    host: str,
    port: int,
    stop_event: threading.Event | None = None,
    *,
    threads: int = 4,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` until ``stop_event`` is set (or forever).

    Blocks the calling thread. ``port=0`` picks a free port; ``on_ready`` is called
    with the base URL (``http://127.0.0.1:8080``) once the socket listens. Raises
    :class:`ConfigError` for a non-loopback ``host`` and ``OSError`` if the port is
    taken. Everything is torn down in this thread, so stopping is thread-safe.
    """
    check_loopback(host)
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
    )
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


def _base_url(server: Any) -> str:
    listen = getattr(server, "effective_listen", None)
    if listen:  # MultiSocketServer ("localhost" may mean 127.0.0.1 and ::1)
        host, port = listen[0][0], listen[0][1]
    else:
        host, port = server.effective_host, server.effective_port
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}:{port}"
