"""The checks of ids, durations, dates and template search paths that DAGs and tasks
share, failing at file:line."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from orchestrator.authoring.where import definition_error as _fail

# every id (dag, task, queue, pool): 1-250 ASCII letters, digits, '_', '.', '-', not
# starting with '.' or '-'; matched whole (fullmatch), so no trailing newline slips through
ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,249}")
ID_RULE = "1 to 250 letters, digits, '_', '.' or '-', not starting with '.' or '-'"


def _check_id(kind: str, value: Any, where: tuple[str | None, int | None]) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise _fail(f"invalid {kind} {value!r}: an id is {ID_RULE}", where)
    return value


def _as_timedelta(name: str, value: Any, where: tuple[str | None, int | None]) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = timedelta(seconds=value)
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise _fail(
            f"{name} must be a non-negative timedelta or number of seconds, got {value!r}", where
        )
    return value


def _or_default(value: timedelta | None, default: timedelta | None) -> timedelta | None:
    return default if value is None else value


def _lost_bound(what: str, value: Any, where: tuple[str | None, int | None]) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _fail(f"{what}: max_lost_tries must be an integer >= 0, got {value!r}", where)
    return value


def _search_path(dag_id: str, value: Any, where: tuple[str | None, int | None]) -> list[str]:
    """``template_searchpath``: a folder or a list of folders (strings)."""
    folders = [value] if isinstance(value, str) else list(value or ())
    if not all(isinstance(f, str) and f for f in folders):
        raise _fail(
            f"DAG {dag_id!r}: template_searchpath must be a folder or a list of folders, "
            f"got {value!r}",
            where,
        )
    return folders


def _aware(
    dag_id: str,
    name: str,
    value: datetime | None,
    zone: ZoneInfo,
    where: Any,
) -> datetime | None:
    """``value`` made aware: a naive datetime is wall time in the DAG's zone."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise _fail(f"DAG {dag_id!r}: {name} must be a datetime, got {value!r}", where)
    if value.tzinfo is None or value.utcoffset() is None:
        value = value.replace(tzinfo=zone)
    return value
