"""Mapped tasks in the web UI: one node, one grid cell, one run-page row per task, with
its instances counted by state, and a paged list of the instances (issue 14).

A mapped task may have 10,000 instances; the run page, graph and grid show it as one
line whose state sums the instances up (:func:`summary_state`), and the instance list
reads one page at a time through the unique key (run_pk, task_id, map_index).

>>> summary_state({"success": 9998, "running": 2})
'running'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from orchestrator.store import Store
from orchestrator.store.core import models as m

# which state a mapped task shows, first match wins: work in progress, then trouble
_PRECEDENCE = (
    "running",
    "up_for_retry",
    "up_for_reschedule",
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
