"""What changed between two stored versions of a DAG: its definition and its file.

Pure functions of two serialized versions (``authoring/spec.py``) and two source
texts; the web UI, the API and ``dags versions --diff`` show what they return.

>>> definition_changes({"schedule": "@daily", "tasks": []}, {"schedule": "@hourly", "tasks": []})
["schedule: '@daily' -> '@hourly'"]
>>> source_diff("a\\nb\\n", "a\\nc\\n", "v1", "v2")[2:]
['@@ -1,2 +1,2 @@', ' a', '-b', '+c']
"""

from __future__ import annotations

import difflib
from typing import Any

IGNORED = frozenset({"lineno", "fileloc", "source_hash"})  # move with every edit of the file
MAX_DIFF_LINES = 5000  # a diff longer than this is cut, with a last line saying so


def _tasks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    tasks = data.get("tasks") or []
    if isinstance(tasks, dict):
        return {k: dict(v) for k, v in tasks.items()}
    return {t["task_id"]: t for t in tasks}


def _plain(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in IGNORED}


def definition_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per change of the DAG's definition from ``old`` to ``new``: DAG-level
    settings (old and new value), tasks added, removed and changed (which fields)."""
    out: list[str] = []
    a, b = _plain(old), _plain(new)
    for key in sorted((set(a) | set(b)) - {"tasks"}):
        if a.get(key) != b.get(key):
            out.append(f"{key}: {a.get(key)!r} -> {b.get(key)!r}")
    ta, tb = _tasks(old), _tasks(new)
    added = sorted(set(tb) - set(ta))
    removed = sorted(set(ta) - set(tb))
    if added:
        out.append("tasks added: " + ", ".join(added))
    if removed:
        out.append("tasks removed: " + ", ".join(removed))
    for task_id in sorted(set(ta) & set(tb)):
        x, y = _plain(ta[task_id]), _plain(tb[task_id])
        fields = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
        if fields:
            out.append(f"task {task_id!r} changed: " + ", ".join(fields))
    return out


def source_diff(
    old: str | None, new: str | None, old_label: str, new_label: str, *, context: int = 3
) -> list[str]:
    """The unified diff (``difflib``) of two DAG file texts, as lines without newlines;
    a missing source counts as empty. Cut past ``MAX_DIFF_LINES`` lines."""
    lines = list(
        difflib.unified_diff(
            (old or "").splitlines(),
            (new or "").splitlines(),
            old_label,
            new_label,
            n=context,
            lineterm="",
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = lines[:MAX_DIFF_LINES] + [f"... {cut} more diff lines not shown"]
    return lines
