"""Mapped tasks in the web UI: one node, one grid cell, one run-page row per task, with
its instances counted by state, and a paged list of the instances (issue 14).

A mapped task may have 10,000 instances; the run page, graph and grid show it as one
line whose state sums the instances up (:func:`summary_state`), from the counts by
state the store reads (``store/reads/``), and the instance list reads one page at a
time (``store.mapped_instances``). Nothing here builds SQL.

>>> summary_state({"success": 9998, "running": 2})
'running'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import escape

from orchestrator.store import Store
from orchestrator.store.reads.dag_pages import Cell, MappedCells
from orchestrator.store.reads.run_pages import MappedLine, MappedTries, TaskLine, TryLine

# which state a mapped task shows, first match wins: work in progress, then trouble
_PRECEDENCE = (
    "running",
    "up_for_retry",
    "up_for_reschedule",
    "deferred",
    "queued",
    "scheduled",
    "failed",
    "upstream_failed",
    "cancelled",
    "skipped",
    "success",
)
INSTANCES_PAGE = 100


def form_map_index() -> int | None:
    """The ``map_index`` form field of an action on one instance: None if absent."""
    from flask import request

    from orchestrator.errors import ConfigError

    raw = request.form.get("map_index", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or len(raw) > 9:
        raise ConfigError(f"form field 'map_index': expected a whole number >= 0, got {raw[:40]!r}")
    return int(raw)


def state_arg() -> str:
    """The ``state`` query parameter of an instance list: a task state, or '' for all."""
    from flask import request

    from orchestrator.errors import ConfigError
    from orchestrator.states import TaskState

    raw = request.args.get("state", "")
    if raw and raw not in {s.value for s in TaskState}:
        raise ConfigError(
            f"query parameter 'state': {raw[:40]!r} is not a task state "
            f"(one of: {', '.join(s.value for s in TaskState)})"
        )
    return raw


def summary_state(counts: Mapping[str, int]) -> str:
    """The one state a task with instances in ``counts`` (state -> n) shows."""
    for state in _PRECEDENCE:
        if counts.get(state):
            return state
    return next(iter(counts), "none")


def counts_text(counts: Mapping[str, int]) -> str:
    """``"3 running, 9997 success"``: the instances by state, in precedence order."""
    order = [s for s in _PRECEDENCE if counts.get(s)] + sorted(set(counts) - set(_PRECEDENCE))
    return ", ".join(f"{counts[s]} {s.replace('_', ' ')}" for s in order)


def instances_page(
    store: Store, run_id: str, task_id: str, *, state: str = "", page: int = 1
) -> dict[str, Any]:
    """One page of a task's instances in map order, its counts by state, and paging."""
    page = max(page, 1)
    run, counts, instances = store.mapped_instances(
        run_id, task_id, state=state, offset=(page - 1) * INSTANCES_PAGE, limit=INSTANCES_PAGE
    )
    total = counts.get(state, 0) if state else sum(counts.values())
    return {
        "run": run,
        "task_id": task_id,
        "instances": instances,
        "counts": dict(sorted(counts.items())),
        "counts_text": counts_text(counts),
        "total": total,
        "state": state,
        "page": page,
        "pages": max((total + INSTANCES_PAGE - 1) // INSTANCES_PAGE, 1),
    }


def add_mapped_cells(cells: dict[tuple[str, str], Cell], mapped: MappedCells) -> None:
    """Add to a grid's ``cells`` one cell per mapped task, summing up its instances
    counted by state (``store.dag_grid``'s third part)."""
    for key, by_state in mapped.items():
        counts = {s: n for s, (n, _) in by_state.items()}
        tries = max(t for _, t in by_state.values())
        cells[key] = Cell(
            summary_state(counts), tries, sum(counts.values()), str(escape(counts_text(counts)))
        )


def merge_states(plain: dict[str, str], mapped: Mapping[str, Mapping[str, int]]) -> dict[str, str]:
    """task_id -> state for a run's graph (``store.run_task_states``): a mapped task's
    instances summed up in one state."""
    plain.update({t: summary_state(c) for t, c in mapped.items()})
    return plain


def merge_lines(
    plain: list[TaskLine], grouped: list[MappedLine]
) -> tuple[list[TaskLine], dict[str, dict[str, int]]]:
    """The run page's lines from ``store.run_lines``: the unmapped ones, then one line
    per mapped task summing up its groups; and those tasks' counts by state."""
    by_task: dict[str, list[MappedLine]] = {}
    for g in grouped:
        by_task.setdefault(g.task_id, []).append(g)
    out = list(plain)
    counts: dict[str, dict[str, int]] = {}
    if not by_task:
        return out, counts
    for task_id, groups in by_task.items():
        counts[task_id] = {g.state: g.count for g in groups}
        starts = [g.start_date for g in groups if g.start_date is not None]
        ends = [g.end_date for g in groups if g.end_date is not None]
        still_open = any(g.open for g in groups)
        out.append(
            TaskLine(
                task_id=task_id,
                state=summary_state(counts[task_id]),
                try_number=max(g.try_number for g in groups),
                max_tries=max(g.max_tries for g in groups),
                owner=None,
                start_date=min(starts) if starts else None,
                end_date=None if still_open or not ends else max(ends),
                map_index=0,
            )
        )
    return out, counts


def merge_tries(plain: list[TryLine], grouped: list[MappedTries]) -> list[TryLine]:
    """The Gantt chart's tries from ``store.run_try_lines``: a mapped task's tries as
    one span from its first start to its last end."""
    by_task: dict[str, list[MappedTries]] = {}
    for g in grouped:
        by_task.setdefault(g.task_id, []).append(g)
    out = list(plain)
    if not by_task:
        return out
    for task_id, groups in by_task.items():
        counts = {g.state: 1 for g in groups}
        ends = [g.end_date for g in groups if g.end_date is not None]
        out.append(
            TryLine(
                task_id=task_id,
                try_number=1,
                state=summary_state(counts),
                start_date=min(g.start_date for g in groups),
                end_date=None if any(g.open for g in groups) or not ends else max(ends),
                map_index=0,
            )
        )
    return out


def group_page(store: Store, run_id: str, group: str, *, page: int = 1) -> dict[str, Any]:
    """One page of a mapped task group's instances (issue 25 item 7): a row per map
    index, a column per task of the group, each cell that instance's state."""
    page = max(page, 1)
    run, members, total, instances = store.group_instances(
        run_id, group, offset=(page - 1) * INSTANCES_PAGE, limit=INSTANCES_PAGE
    )
    prefix = group + "."
    return {
        "run": run,
        "group": group,
        "members": members,
        "labels": {t: t[len(prefix) :] if t.startswith(prefix) else t for t in members},
        "instances": instances,
        "total": total,
        "page": page,
        "pages": max((total + INSTANCES_PAGE - 1) // INSTANCES_PAGE, 1),
    }
