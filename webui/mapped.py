"""Mapped tasks in the web UI: one node, one grid cell, one run-page row per task, with
its instances counted by state, and a paged list of the instances (issue 14).

A mapped task may have 10,000 instances; the run page, graph and grid show it as one
line whose state sums the instances up (:func:`summary_state`), and the instance list
reads one page at a time through the unique key (run_pk, task_id, map_index).

>>> summary_state({"success": 9998, "running": 2})
'running'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from orchestrator.store import Store
from orchestrator.store import models as m

# which state a mapped task shows, first match wins: work in progress, then trouble
_PRECEDENCE = (
    "running",
    "up_for_retry",
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


def collapse_lines(lines: Iterable[Any]) -> tuple[list[Any], dict[str, dict[str, int]]]:
    """Task lines (:class:`webui.queries.TaskLine`) with each mapped task's instances
    merged into one line, and those tasks' instance counts by state."""
    out: list[Any] = []
    counts: dict[str, dict[str, int]] = {}
    merged: dict[str, list[Any]] = {}
    for line in lines:
        if line.map_index < 0:
            out.append(line)
            continue
        group = merged.get(line.task_id)
        if group is None:
            merged[line.task_id] = [line]
            out.append(line.task_id)  # its place, filled in below
        else:
            group.append(line)
        by = counts.setdefault(line.task_id, {})
        by[line.state] = by.get(line.state, 0) + 1
    for i, item in enumerate(out):
        if isinstance(item, str):
            group = merged[item]
            starts = [g.start_date for g in group if g.start_date is not None]
            ends = [g.end_date for g in group]
            out[i] = group[0]._replace(
                state=summary_state(counts[item]),
                try_number=max(g.try_number for g in group),
                max_tries=max(g.max_tries for g in group),
                owner=None,
                start_date=min(starts) if starts else None,
                end_date=None if any(e is None for e in ends) else max(ends),
            )
    return out, counts


def merge_lines(
    plain: list[Any], grouped: list[Any]
) -> tuple[list[Any], dict[str, dict[str, int]]]:
    """The run page's lines from :func:`webui.queries.run_lines`: the unmapped ones, then
    one line per mapped task summing up its groups; and those tasks' counts by state."""
    by_task: dict[str, list[Any]] = {}
    for g in grouped:
        by_task.setdefault(g.task_id, []).append(g)
    out = list(plain)
    counts: dict[str, dict[str, int]] = {}
    if not by_task:
        return out, counts
    from .queries import TaskLine

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


def merge_tries(plain: list[Any], grouped: list[Any]) -> list[Any]:
    """The Gantt chart's tries from :func:`webui.queries.run_try_lines`: a mapped task's
    tries as one span from its first start to its last end."""
    by_task: dict[str, list[Any]] = {}
    for g in grouped:
        by_task.setdefault(g.task_id, []).append(g)
    out = list(plain)
    if not by_task:
        return out
    from .queries import TryLine

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


def collapse_tries(tries: Iterable[Any], mapped: set[str]) -> list[Any]:
    """Try lines with each mapped task's tries merged into one span (first start to
    last end), so its Gantt row is one bar, not one per instance."""
    out: list[Any] = []
    spans: dict[str, list[Any]] = {}
    for t in tries:
        if t.task_id in mapped:
            spans.setdefault(t.task_id, []).append(t)
        else:
            out.append(t)
    for group in spans.values():
        ends = [t.end_date for t in group]
        counts: dict[str, int] = {}
        for t in group:
            counts[t.state] = counts.get(t.state, 0) + 1
        out.append(
            group[0]._replace(
                try_number=1,
                state=summary_state(counts),
                start_date=min(t.start_date for t in group),
                end_date=None if any(e is None for e in ends) else max(ends),
            )
        )
    return out


def task_counts(store: Store, run_id: str) -> dict[str, dict[str, int]]:
    """The run's mapped tasks' instances by state (one grouped, indexed query)."""
    ti = m.task_instances
    out: dict[str, dict[str, int]] = {}
    with store.read() as conn:
        rows = conn.execute(
            select(ti.c.task_id, ti.c.state, func.count())
            .where(ti.c.run_id == run_id, ti.c.map_index >= 0)
            .group_by(ti.c.task_id, ti.c.state)
        ).all()
    for task_id, state, n in rows:
        out.setdefault(task_id, {})[state] = n
    return out


@dataclass(frozen=True)
class InstanceLine:
    map_index: int
    state: str
    try_number: int
    max_tries: int
    start_date: Any
    end_date: Any
    owner: str | None
    map_kwargs: str | None


def instances_page(
    store: Store, run_id: str, task_id: str, *, state: str = "", page: int = 1
) -> dict[str, Any]:
    """One page of a task's instances in map order, its counts by state, and paging."""
    from orchestrator.errors import NotFoundError

    ti = m.task_instances
    run = store.get_run(run_id)
    page = max(page, 1)
    cond = [ti.c.run_pk == run.id, ti.c.task_id == task_id]
    with store.read() as conn:
        counts = dict(
            conn.execute(select(ti.c.state, func.count()).where(*cond).group_by(ti.c.state)).all()
        )
        if not counts:
            raise NotFoundError(f"run {run_id!r} has no task {task_id!r}")
        if state:
            cond.append(ti.c.state == state)
        rows = conn.execute(
            select(
                ti.c.map_index, ti.c.state, ti.c.try_number, ti.c.max_tries, ti.c.start_date,
                ti.c.end_date, ti.c.owner, ti.c.map_kwargs,
            )
            .where(*cond)
            .order_by(ti.c.map_index)
            .offset((page - 1) * INSTANCES_PAGE)
            .limit(INSTANCES_PAGE)
        ).all()  # fmt: skip
    total = counts.get(state, 0) if state else sum(counts.values())
    return {
        "run": run,
        "task_id": task_id,
        "instances": [InstanceLine(*row) for row in rows],
        "counts": dict(sorted(counts.items())),
        "counts_text": counts_text(counts),
        "total": total,
        "state": state,
        "page": page,
        "pages": max((total + INSTANCES_PAGE - 1) // INSTANCES_PAGE, 1),
    }
