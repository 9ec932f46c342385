"""Expanding mapped tasks: one task instance per map item, created exactly once.

A run is created with one instance per task, ``map_index`` -1. For a mapped task that
instance is a placeholder: it is never claimed. When the placeholder's trigger rule
releases it (in the transaction that records its sources' success, or in the
scheduler's ``release_ready``), :func:`expand_locked` reads the sources (the results of
upstream tasks, a mapped one's collected in map order, the run's params, literal
lists), computes the items (:mod:`orchestrator.scheduling.mapping`), and, in the same
transaction:

- turns the placeholder into instance 0 (a compare-and-set on ``map_index = -1 AND
  state = 'scheduled'``, so of two schedulers, or a worker and a scheduler, racing to
  expand one task exactly one wins; the other changes nothing) and inserts instances
  1..n-1, all queued; the unique key (run_pk, task_id, map_index) backs this up;
- an empty list skips the placeholder; a value that is not a list, or more items than
  ``max_map_length``, fails it with the error of :class:`MapError`;
- an ``expand_kwargs`` item that is not an object (a :class:`BadItem`) gets its
  instance created ``failed`` with the error, no try and no arguments; the others are
  queued and run, as in Airflow (issue 25's peer case). Cleared, such an instance
  fails its try at once (``engine/mapped_job.py``).

A process killed in the middle commits nothing: the placeholder is still there and the
next release expands it.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from orchestrator.authoring.map_index_template import render as render_map_index
from orchestrator.authoring.spec import DagSpec
from orchestrator.authoring.task_controls import is_gated
from orchestrator.scheduling.mapping import (
    UNMAPPED,
    BadItem,
    MapError,
    collect,
    map_items,
    resolve,
    task_sources,
)
from orchestrator.states import TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import record_event

log = logging.getLogger(__name__)
ti = m.task_instances
_BATCH = 2000  # rows per INSERT of new instances


def expand_locked(
    conn: Connection,
    spec: DagSpec,
    run_pk: int,
    task_ids: Iterable[str],
    now: datetime,
    limit: int,
) -> int:
    """Expand the mapped tasks ``task_ids`` of run ``run_pk``, whose placeholders their
    trigger rules release now; returns how many instances were queued. The caller holds
    the run's lock (or SQLite's writer lock)."""
    queued = 0
    for task_id in sorted(task_ids):
        queued += _expand_one(conn, spec, run_pk, task_id, now, limit)
    return queued


def expand_group_locked(
    conn: Connection, spec: DagSpec, run_pk: int, group: str, now: datetime, limit: int
) -> int:
    """Expand every task of the mapped task group ``group`` of run ``run_pk`` (issue 25
    item 7), each into one instance per item, all ``scheduled``: the caller decides
    each instance by its trigger rule over the same instance of its upstream tasks of
    the group. A task expanded already (cleared and collapsed alone, say) is expanded
    again alone. Returns how many instances were created."""
    made = 0
    for task_id in sorted(spec.group_members(group)):
        made += _expand_one(conn, spec, run_pk, task_id, now, limit, waiting=True)
    return made


def _expand_one(
    conn: Connection,
    spec: DagSpec,
    run_pk: int,
    task_id: str,
    now: datetime,
    limit: int,
    waiting: bool = False,
) -> int:
    task = spec.tasks[task_id]
    assert task.mapping is not None
    place = conn.execute(_PLACEHOLDER, {"run_pk": run_pk, "task_id": task_id}).first()
    if place is None:
        return 0  # expanded already, or no longer scheduled
    run = conn.execute(select(m.dag_runs).where(m.dag_runs.c.id == run_pk)).one()
    params = {**spec.params, **json.loads(run.conf or "{}")}
    sources = task_sources(task.mapping)
    results: dict[str, Any] = {}
    for source in sources:
        ok, value = source_value(conn, run_pk, source)
        if not ok:
            return _finish_placeholder(
                conn,
                place,
                TaskState.UPSTREAM_FAILED,
                now,
                f"{source} did not succeed: nothing to map {task_id} over",
            )
        results[source] = value
    try:
        items = map_items(
            task.mapping, resolve(task.mapping, params, results), limit=limit, task_id=task_id
        )
    except MapError as exc:
        return _finish_placeholder(conn, place, TaskState.FAILED, now, str(exc))
    if not items:
        return _finish_placeholder(
            conn, place, TaskState.SKIPPED, now, f"mapped over an empty list: {task_id} skipped"
        )
    name = functools.partial(_name, task.map_index_template, task.mapping.get("partial"))
    first = _instance(items[0], now, waiting) | {"b_name": name(items[0])}
    taken = conn.execute(_TAKE_PLACEHOLDER, {"b_id": place.id, **first}).rowcount
    if not taken:
        return 0  # another transaction expanded it first
    base = {
        "run_pk": run_pk,
        "dag_id": place.dag_id,
        "run_id": place.run_id,
        "task_id": task_id,
        "try_number": 0,
        "max_tries": task.max_tries,
        "queue": place.queue,
        "pool": place.pool,
        "pool_slots": place.pool_slots,
        # issue 14: claim order and claim-time checks, as the placeholder (instance 0) has
        "priority_weight": task.priority_weight,
        "gated": is_gated(task, spec.max_active_tasks),
    }
    for start in range(1, len(items), _BATCH):
        conn.execute(
            insert(ti),
            [
                base
                | {"map_index": i, "rendered_map_index": name(items[i])}
                | _row(items[i], now, waiting)
                for i in range(start, min(start + _BATCH, len(items)))
            ],
        )
    over = ", ".join(sources) or "its literal lists and params"
    bad = [i for i, item in enumerate(items) if isinstance(item, BadItem)]
    failed = f"; {len(bad)} failed at once: {items[bad[0]].error}" if bad else ""
    record_event(
        conn,
        now,
        "task_expanded",
        f"mapped over {over}: {len(items)} instance(s) created{failed}",
        dag_id=place.dag_id,
        run_id=place.run_id,
        task_id=task_id,
    )
    if bad:
        log.info("task_map_failed %s: %s", task_id, items[bad[0]].error)
    return len(items) if waiting else len(items) - len(bad)


def _instance(item: Any, now: datetime, waiting: bool = False) -> dict[str, Any]:
    """The bind values of an instance of ``item``: queued with its arguments (or, for
    a task of a mapped group, ``waiting`` for its trigger rule: scheduled), or, for a
    :class:`BadItem`, failed now with its error and no arguments."""
    if isinstance(item, BadItem):
        return {"b_kwargs": None, "b_state": TaskState.FAILED, "b_ready": None,
                "b_end": now, "b_error": item.error}  # fmt: skip
    if waiting:
        return {"b_kwargs": json.dumps(item), "b_state": TaskState.SCHEDULED, "b_ready": None,
                "b_end": None, "b_error": None}  # fmt: skip
    return {"b_kwargs": json.dumps(item), "b_state": TaskState.QUEUED, "b_ready": now,
            "b_end": None, "b_error": None}  # fmt: skip


def _name(template: str | None, fixed: dict[str, Any] | None, item: Any) -> str | None:
    """An instance's name from its task's map_index_template (issue 25 item 7)."""
    if template is None or isinstance(item, BadItem):
        return None
    return render_map_index(template, {**(fixed or {}), **item})


def _row(item: Any, now: datetime, waiting: bool = False) -> dict[str, Any]:
    """:func:`_instance` as the columns of an inserted row."""
    v = _instance(item, now, waiting)
    return {"map_kwargs": v["b_kwargs"], "state": v["b_state"], "ready_at": v["b_ready"],
            "end_date": v["b_end"], "error": v["b_error"]}  # fmt: skip


def collapse_locked(conn: Connection, run_pk: int, task_id: str) -> bool:
    """A wholly cleared mapped task back to its placeholder, to be expanded again.

    Only when none of its instances is still unfinished other than as cleared
    (``scheduled``): instances 1..n-1 are deleted with their tries, instance 0 becomes
    the placeholder (map_index -1) and keeps its tries (which keep map index 0). True if it collapsed.
    """
    rows = conn.execute(_SOURCE_ROWS, {"run_pk": run_pk, "task_id": task_id}).all()
    if not rows or any(r.state != TaskState.SCHEDULED for r in rows):
        return False
    if len(rows) == 1 and rows[0].map_index == UNMAPPED:
        return False  # never expanded: it is the placeholder already
    extra = select(ti.c.id).where(
        ti.c.run_pk == run_pk, ti.c.task_id == task_id, ti.c.map_index > 0
    )
    conn.execute(delete(m.task_tries).where(m.task_tries.c.ti_id.in_(extra.scalar_subquery())))
    conn.execute(
        delete(ti).where(ti.c.run_pk == run_pk, ti.c.task_id == task_id, ti.c.map_index > 0)
    )
    conn.execute(
        update(ti)
        .where(ti.c.run_pk == run_pk, ti.c.task_id == task_id)
        .values(map_index=UNMAPPED, map_kwargs=None, rendered_map_index=None)
    )
    return True


def source_value(conn: Connection, run_pk: int, task_id: str) -> tuple[bool, Any]:
    """(succeeded, decoded result) of a source task in a run; a mapped source's results
    are collected into one list in map order (only its successful instances')."""
    rows = conn.execute(_SOURCE_ROWS, {"run_pk": run_pk, "task_id": task_id}).all()
    mapped = [r for r in rows if r.map_index != UNMAPPED]
    if mapped:
        done = [r for r in mapped if r.state == TaskState.SUCCESS]
        if not done:
            return False, None
        return True, collect(
            (r.map_index, None if r.result is None else json.loads(r.result)) for r in done
        )
    if not rows or rows[0].state != TaskState.SUCCESS:
        if rows and rows[0].state == TaskState.SKIPPED:
            return True, []  # an empty map upstream: nothing to map over
        return False, None
    return True, None if rows[0].result is None else json.loads(rows[0].result)


def _finish_placeholder(conn: Connection, place: Any, state: str, now: datetime, why: str) -> int:
    done = conn.execute(
        update(ti)
        .where(ti.c.id == place.id, ti.c.map_index == UNMAPPED, ti.c.state == TaskState.SCHEDULED)
        .values(state=state, end_date=now, error=why if state != TaskState.SKIPPED else None)
    ).rowcount
    if done:
        kind = "task_skipped" if state == TaskState.SKIPPED else "task_map_failed"
        record_event(
            conn, now, kind, why, dag_id=place.dag_id, run_id=place.run_id, task_id=place.task_id
        )
        log.info("%s: %s", kind, why)
    return 0


_PLACEHOLDER = select(ti).where(
    ti.c.run_pk == bindparam("run_pk"),
    ti.c.task_id == bindparam("task_id"),
    ti.c.map_index == UNMAPPED,
    ti.c.state == TaskState.SCHEDULED,
)
_TAKE_PLACEHOLDER = (
    update(ti)
    .where(
        ti.c.id == bindparam("b_id"),
        ti.c.map_index == UNMAPPED,
        ti.c.state == TaskState.SCHEDULED,
    )
    .values(
        map_index=0,
        map_kwargs=bindparam("b_kwargs"),
        rendered_map_index=bindparam("b_name"),
        state=bindparam("b_state"),
        ready_at=bindparam("b_ready"),
        end_date=bindparam("b_end"),
        error=bindparam("b_error"),
    )
)
_SOURCE_ROWS = (
    select(ti.c.map_index, ti.c.state, ti.c.result)
    .where(ti.c.run_pk == bindparam("run_pk"), ti.c.task_id == bindparam("task_id"))
    .order_by(ti.c.map_index)
)
