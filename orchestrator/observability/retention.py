"""``orchestrator db clean``: delete old history in batches, try logs included (the
files in this machine's log folder and the pieces workers shipped to the store).

>>> parse_age("90d"), parse_age("12h")
(datetime.timedelta(days=90), datetime.timedelta(seconds=43200))
"""

from __future__ import annotations

import contextlib
import os
import re
from datetime import datetime, timedelta
from typing import Any

from orchestrator.errors import ConfigError
from orchestrator.store.cluster.retention_store import CleanResult

_AGE = re.compile(r"^\s*(\d+)\s*([dhmw])\s*$")
_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes"}


def parse_age(text: str) -> timedelta:
    match = _AGE.match(text or "")
    if not match:
        raise ConfigError(
            f"--older-than: expected a number and a unit (90d, 12h, 4w), got {text!r}"
        )
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def remove_logs(log_dir: str, paths: list[str]) -> int:
    """Delete the try log files and the folders they leave empty. Returns files removed."""
    removed = 0
    root = os.path.abspath(log_dir)
    for rel in paths:
        path = os.path.abspath(os.path.join(root, rel))
        if not path.startswith(root + os.sep):
            continue  # never outside the log folder
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
            removed += 1
        folder = os.path.dirname(path)
        while folder != root and folder.startswith(root + os.sep):
            try:
                os.rmdir(folder)  # only succeeds when empty
            except OSError:
                break
            folder = os.path.dirname(folder)
    return removed


def clean(
    store: Any, log_dir: str, now: datetime, older_than: timedelta, *,
    dry_run: bool = False, batch: int = 500,
) -> dict[str, int]:  # fmt: skip
    """Delete finished runs (and their rows and logs) that ended before ``now - older_than``."""
    cutoff = now - older_than
    if dry_run:
        return store.count_history(cutoff).as_dict()
    total = CleanResult()
    files = 0
    while True:
        part = store.clean_history(cutoff, batch=batch)
        files += remove_logs(log_dir, part.log_paths)
        for name in ("runs", "task_instances", "tries", "events", "alerts", "log_chunks"):
            setattr(total, name, getattr(total, name) + getattr(part, name))
        if not part.runs:
            break
    return total.as_dict() | {"log_files": files}
