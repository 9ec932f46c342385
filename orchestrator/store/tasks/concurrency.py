"""Claiming the *gated* task instances: those of a task with ``depends_on_past`` or
``max_active_tis_per_dag``, or of a DAG with ``max_active_tasks`` (issue 14).

Instances are marked ``gated`` when their run is created (run_rows.py), so the plain
claim (claims.py) skips them with one indexed condition and nothing changes for DAGs
that use none of these. Here, in the claim's transaction, the candidates are read
in claim order (higher ``priority_weight`` first, then the oldest ready), a lock per
DAG is taken (a PostgreSQL advisory transaction lock, in dag_id order; SQLite
serialises writers anyway), the running instances counted, and each candidate is judged by
:func:`orchestrator.scheduling.concurrency.blocked_by`; those it lets through (and
whose pool has room) are taken like any claim. Two workers claiming at once thus
never exceed a limit: the second waits for the first's lock and counts its claims.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, select, true

from orchestrator.scheduling.concurrency import GateFacts, blocked_by
from orchestrator.states import TASK_CLAIMABLE, TaskState
from orchestrator.store.core import models as m

ti, r = m.task_instances, m.dag_runs
CANDIDATES = 200  # gated candidates judged per claim, at most
GATE_LOCK = 14  # the first key of the PostgreSQL advisory locks taken here (issue 14)

_GATED = (
    select(
        ti.c.id, ti.c.dag_id, ti.c.task_id, ti.c.pool, ti.c.pool_slots,
        r.c.version_hash, r.c.logical_date,
    )
    .join(r, r.c.id == ti.c.run_pk)
    .where(
        ti.c.gated == true(),
        ti.c.state.in_(list(TASK_CLAIMABLE)),
        ti.c.ready_at <= bindparam("ready_by"),
        ti.c.queue.in_(bindparam("queues", expanding=True)),
    )
    .order_by(ti.c.priority_weight.desc(), ti.c.ready_at, ti.c.id)
    .limit(bindparam("limit"))
)  # fmt: skip


def _running(conn: Connection, dag_ids: list[str]) -> Counter[tuple[str, str]]:
    rows = conn.execute(
        select(ti.c.dag_id, ti.c.task_id, func.count())
        .where(ti.c.dag_id.in_(dag_ids), ti.c.state == TaskState.RUNNING)
        .group_by(ti.c.dag_id, ti.c.task_id)
    ).all()
    return Counter({(d, t): n for d, t, n in rows})


def past_state(
    conn: Connection, dag_id: str, task_id: str, logical_date: datetime
) -> tuple[str | None, str | None]:
    """(run_id, state) of ``task_id`` in the DAG's run just before ``logical_date``;
    (None, None) when there is no such run or the task was not in it."""
    prev = conn.execute(
        select(r.c.id, r.c.run_id)
        .where(r.c.dag_id == dag_id, r.c.logical_date < logical_date)
        .order_by(r.c.logical_date.desc(), r.c.id.desc())
        .limit(1)
    ).first()
    if prev is None:
        return None, None
    state = conn.execute(
        select(ti.c.state).where(and_(ti.c.run_pk == prev.id, ti.c.task_id == task_id))
    ).scalar()
    return (prev.run_id, state) if state is not None else (None, None)


def gate_facts(
    conn: Connection,
    spec: Any,
    task_id: str,
    logical_date: datetime,
    running: Counter[tuple[str, str]] | None = None,
) -> GateFacts:
    """The facts :func:`blocked_by` judges for one instance (``running``: counts read
    already in this transaction, with what it claimed so far)."""
    task = spec.tasks[task_id]
    if running is None:
        running = _running(conn, [spec.dag_id])
    past = (None, None)
    if task.depends_on_past:
        past = past_state(conn, spec.dag_id, task_id, logical_date)
    return GateFacts(
        task_id=task_id,
        max_active_tasks=spec.max_active_tasks,
        dag_running=sum(n for (d, _), n in running.items() if d == spec.dag_id),
        max_active_tis_per_dag=task.max_active_tis_per_dag,
        task_running=running[(spec.dag_id, task_id)],
        depends_on_past=task.depends_on_past,
        past_run_id=past[0],
        past_state=past[1],
    )


def pick_gated(
    store: Any, conn: Connection, now: datetime, limit: int, queues: list[str]
) -> list[int]:
    """The ids of the gated instances that may be claimed now, at most ``limit``, in
    claim order. Locks their DAGs' rows (PostgreSQL) before counting."""
    candidates = conn.execute(
        _GATED, {"ready_by": now, "queues": queues, "limit": CANDIDATES}
    ).all()
    if not candidates:
        return []
    dag_ids = sorted({c.dag_id for c in candidates})
    if store.is_postgres:
        # a lock nothing else takes (no cycle with the runs, pools or instances other
        # transitions lock), per DAG, in dag_id order: gated claims of one DAG in turn
        for dag_id in dag_ids:
            conn.execute(select(func.pg_advisory_xact_lock(GATE_LOCK, func.hashtext(dag_id))))
        # read again under the locks: what a claimer we waited for took is gone now
        again = conn.execute(_GATED, {"ready_by": now, "queues": queues, "limit": CANDIDATES})
        candidates = [c for c in again if c.dag_id in set(dag_ids)]
    running = _running(conn, dag_ids)
    # pools in name order, as the plain pooled claim locks them
    pools = {
        name: _pool_free(store, conn, name)
        for name in sorted({c.pool for c in candidates if c.pool})
    }
    chosen: list[int] = []
    for c in candidates:
        if len(chosen) >= limit:
            break
        try:
            spec = store.spec(c.dag_id, c.version_hash)
            facts = gate_facts(conn, spec, c.task_id, c.logical_date, running)
        except Exception:  # noqa: BLE001 - no such version or task: the plain path decides
            continue
        if blocked_by(facts):
            continue
        if c.pool is not None:
            if c.pool_slots > pools[c.pool]:
                continue
            pools[c.pool] -= c.pool_slots
        chosen.append(c.id)
        running[(c.dag_id, c.task_id)] += 1
    return chosen


def _pool_free(store: Any, conn: Connection, name: str) -> int:
    q = select(m.pools.c.slots).where(m.pools.c.name == name)
    if store.is_postgres:
        q = q.with_for_update()
    slots = conn.execute(q).scalar()
    if slots is None:
        return 0
    used = conn.execute(
        select(func.coalesce(func.sum(ti.c.pool_slots), 0)).where(
            ti.c.pool == name, ti.c.state == TaskState.RUNNING
        )
    ).scalar_one()
    return int(slots) - int(used)
