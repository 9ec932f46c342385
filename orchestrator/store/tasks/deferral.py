"""A task instance's deferral (issue 30): the try gives up its slot to a trigger, and
the trigger's event queues it again with the same try.

These are the ``tasks/`` aggregate's transaction-level functions; ``store/triggers/``
calls them in the transactions that also write the ``triggers`` table (creating the
trigger with the deferral; deleting it with the resume), so a deferred instance always
has its trigger and a trigger's event resumes its instance once:

- ``defer_locked``: ``running -> deferred``, fenced like every outcome (id, try,
  owner, ``running``); the try's row is ``deferred`` (open: it is reopened on resume).
- ``resume_locked``: ``deferred -> queued`` for the instance waiting on that trigger,
  a compare-and-set on (``deferred``, ``trigger_id``): a second event for the same
  trigger, from a triggerer that lost its lease, changes nothing. The claim keeps the
  try number of a queued instance with ``next_method`` (``claims.py``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from sqlalchemy import Connection, bindparam, select, update

from orchestrator.states import TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import record_event
from orchestrator.store.core.records import Claim
from orchestrator.store.tasks.task_store import _fence, _stale

ti = m.task_instances
tries = m.task_tries


def defer_locked(
    conn: Connection,
    claim: Claim,
    trigger_id: int,
    *,
    method_name: str,
    kwargs_json: str,
    timeout: float | None,
    classpath: str,
    now: datetime,
) -> bool:
    """``running -> deferred`` waiting on ``trigger_id``; False if fenced out."""
    done = conn.execute(
        update(ti)
        .where(*_fence(claim))
        .values(
            state=TaskState.DEFERRED,
            owner=None,
            lease_expires_at=None,
            trigger_id=trigger_id,
            trigger_timeout=now + timedelta(seconds=timeout) if timeout else None,
            next_method=method_name,
            next_kwargs='{"kwargs": ' + kwargs_json + "}",
            error=None,
        )
    ).rowcount
    if not done:
        row = conn.execute(
            select(ti.c.dag_id, ti.c.run_id, ti.c.task_id, ti.c.try_number, ti.c.owner).where(
                ti.c.id == claim.ti_id
            )
        ).first()
        if row is not None:
            _stale(conn, row, now, try_number=claim.try_number, owner=claim.owner)
        return False
    conn.execute(
        update(tries)
        .where(
            tries.c.ti_id == claim.ti_id,
            tries.c.try_number == claim.try_number,
            tries.c.state == "running",
        )
        .values(state=TaskState.DEFERRED)
    )
    record_event(
        conn,
        now,
        "task_deferred",
        f"try {claim.try_number} deferred: waiting for trigger {trigger_id} ({classpath})"
        + (f", timeout {timeout:g}s" if timeout else ""),
        dag_id=claim.dag_id,
        run_id=claim.run_id,
        task_id=claim.task_id,
        try_number=claim.try_number,
        map_index=claim.map_index,
    )
    return True


def resume_locked(conn: Connection, events: dict[int, str], now: datetime) -> list[int]:
    """Queue the instances deferred on the triggers of ``events`` (trigger id -> the
    event's payload as JSON text) with their event; the ids of the instances resumed."""
    if not events:
        return []
    rows = conn.execute(
        select(ti.c.id, ti.c.trigger_id, ti.c.next_kwargs).where(
            ti.c.trigger_id.in_(sorted(events)), ti.c.state == TaskState.DEFERRED
        )
    ).all()
    if not rows:
        return []
    resumed = []
    for r in rows:
        stored = json.loads(r.next_kwargs) if r.next_kwargs else {}
        stored["event"] = json.loads(events[r.trigger_id])
        params = {"b_id": r.id, "b_trigger": r.trigger_id, "b_now": now}
        if conn.execute(_RESUME, params | {"b_kwargs": json.dumps(stored)}).rowcount:
            resumed.append(r.id)
    return resumed


_RESUME = (
    update(ti)
    .where(
        ti.c.id == bindparam("b_id"),
        ti.c.state == TaskState.DEFERRED,
        ti.c.trigger_id == bindparam("b_trigger"),
    )
    .values(
        state=TaskState.QUEUED,
        ready_at=bindparam("b_now"),
        trigger_id=None,
        trigger_timeout=None,
        next_kwargs=bindparam("b_kwargs"),
    )
)
