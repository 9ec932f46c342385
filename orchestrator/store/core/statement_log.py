"""Slow statements named in the log: what waited, for how long, and why it gave up.

Off by default (``db_slow_statement_seconds``). When set, every statement a store's
engine runs that takes longer is logged at WARNING with the first words of its SQL and
its seconds, and a statement that fails after waiting (a lock timeout, a statement
timeout, a session ended for idling) is logged with its SQLSTATE. It is how the last
lock wait behind a frozen worker was found (issue 32): turn it on in every process of a
cluster and the log names each statement that waited on a peer.

>>> log_slow_statements(engine, 0.2)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from typing import Any

from sqlalchemy import Engine, event

log = logging.getLogger(__name__)
_STARTED = "orchestrator_statement_started"


def log_slow_statements(
    engine: Engine, threshold: float, gave_up: frozenset[str] | set[str] = frozenset()
) -> None:
    """Log each statement of ``engine`` that takes ``threshold`` seconds or more, and each
    that failed with one of the ``gave_up`` SQLSTATEs (a bounded wait that ended)."""

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn: Any, _cur: Any, _stmt: Any, _params: Any, _ctx: Any, _many: Any) -> None:
        conn.info[_STARTED] = time.perf_counter()

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: Any, _cur: Any, stmt: str, _params: Any, _ctx: Any, many: bool) -> None:
        started = conn.info.pop(_STARTED, None)
        if started is None:
            return
        took = time.perf_counter() - started
        if took >= threshold:
            log.warning("slow statement: %.3fs in %s", took, _what(stmt, many))

    @event.listens_for(engine, "handle_error")
    def _failed(ctx: Any) -> None:
        conn = ctx.connection
        started = conn.info.pop(_STARTED, None) if conn is not None else None
        if started is None or ctx.statement is None:
            return
        took = time.perf_counter() - started
        code = getattr(ctx.original_exception, "sqlstate", None)
        if took >= threshold or code in gave_up:
            reason = str(ctx.original_exception).splitlines()[0]
            log.warning(
                "statement gave up after %.3fs in %s: %s%s",
                took,
                _what(ctx.statement, False),
                f"SQLSTATE {code}: " if code else "",
                reason,
            )


def _what(statement: str, many: bool) -> str:
    """The statement's first words (never its parameters: they may hold secrets)."""
    words = " ".join(statement.split()[:6])
    return f"{words!r}{' (executemany)' if many else ''}"
