"""Logging for the CLI entry points: text for people, ``--log-format json`` for machines.

Log calls keep their stable ``key=value`` words (``dag_id=etl run_id=... try=2``);
the JSON formatter lifts those into fields, and also takes them from ``extra=``, so
every line from every process carries dag_id/run_id/task_id/try where they apply.

>>> configure("INFO", "json")                                  # doctest: +SKIP
>>> logging.getLogger("x").info("started dag_id=%s try=%s", "etl", 2)  # doctest: +SKIP
{"ts": "...", "level": "INFO", "logger": "x", "message": "started dag_id=etl try=2",
 "dag_id": "etl", "try": 2, ...}
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime

FIELDS = ("dag_id", "run_id", "task_id", "try", "worker", "alert_id")
_PAIR = re.compile(r"\b(dag_id|run_id|task_id|try|worker|alert_id)=([^\s,;:]+)")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, process, context fields."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        out: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
            "pid": record.process or os.getpid(),
            "thread": record.threadName,
        }
        for key, value in _PAIR.findall(message):
            out.setdefault(
                key, int(value) if key in ("try", "alert_id") and value.isdigit() else value
            )
        for key in FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure(level: str, fmt: str = "text", stream=None) -> None:  # noqa: ANN001
    """Set up the root logger for a CLI command (text: ``logging.basicConfig``)."""
    numeric = getattr(logging, level.upper(), logging.INFO)
    # Alembic's INFO lines (a "setup plugin" line per plugin, "Context impl ...") are
    # its internals: shown at DEBUG only; store.core.db.upgrade logs what a migration did
    logging.getLogger("alembic").setLevel(
        logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING
    )
    if fmt != "json":
        logging.basicConfig(level=numeric, format=TEXT_FORMAT, stream=stream or sys.stderr)
        return
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if type(h) is not logging.StreamHandler]
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(numeric)


class _Masking(logging.Formatter):
    """Another formatter's lines with ``mask`` applied (tracebacks included)."""

    def __init__(self, inner: logging.Formatter, mask: Callable[[str], str]) -> None:
        super().__init__()
        self.inner = inner
        self.mask = mask

    def format(self, record: logging.LogRecord) -> str:
        return self.mask(self.inner.format(record))


def mask_with(mask: Callable[[str], str]) -> None:
    """Pass every line the root logger's handlers write through ``mask`` (issue 24: the
    settings' secrets, ``engine.settings_secrets``); configured by the CLI only."""
    for handler in logging.getLogger().handlers:
        inner = handler.formatter or logging.Formatter(TEXT_FORMAT)
        if not isinstance(inner, _Masking):
            handler.setFormatter(_Masking(inner, mask))
