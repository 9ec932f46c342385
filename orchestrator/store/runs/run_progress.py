"""Moving DAG runs on: queued -> running (within overlap policy) -> success or failed.

Both transitions run inside a caller's write transaction, set-based, so one
transaction can finish a batch of runs and start the queued runs they made room for:

- :func:`finish_runs_locked` finishes the given running runs whose task instances are
  all finished (the caller holds their rows' locks);
- :func:`start_runs_locked` locks a DAG's row and starts its queued runs within
  ``max_active_runs`` and its ``overlap`` policy (backfill runs within their
  backfill's own limit), queueing each started run's root tasks at once (a task
  without upstream tasks is released by every trigger rule), so workers can claim
  without waiting for a scheduler's ``release_ready`` pass.

Lock order on PostgreSQL, so these never deadlock with each other: a transaction
that already holds run rows (finishing them) never waits for a DAG row (it takes it
with ``SKIP LOCKED``) and never cancels a run (which would wait for that run's row);
if it cannot take the DAG row, or the policy would cancel a run, it starts nothing
and says so (``None``), and the scheduler's ``start_runs``, which holds no run row
when it locks the DAG, does it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, insert, select, union_all, update

from orchestrator.authoring.spec import DagSpec
from orchestrator.states import RUN_ACTIVE, TASK_UNFINISHED, RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import record_event

log = logging.getLogger(__name__)

r, ti = m.dag_runs, m.task_instances
SpecOf = Callable[[str, str], DagSpec]  # (dag_id, version_hash) -> spec, cached by the store
_NO_LIMIT = 2**31 - 1
_BAD = (TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED)


@dataclass(frozen=True)
class Started:
    """Runs started in one transaction, and how many of their root tasks were queued."""

    run_ids: list[str]
    tasks_queued: int = 0
    more: bool = False  # a bounded call left DAGs to start for the next one (issue 29)


def backfill_starts(conn: Connection, runs: list) -> list:
    """Which of one DAG's queued backfill runs may start now (inside a locked write)."""
    if not runs:
        return []
    ids = sorted({x.backfill_id for x in runs})
    b = m.backfills
    rows = {row.id: row for row in conn.execute(select(b).where(b.c.id.in_(ids)))}
    out = []
    for bid in ids:
        row = rows.get(bid)
        mine = [x for x in runs if x.backfill_id == bid]
        if row is None or row.state != "running":
            continue
        running = sum(x.state == RunState.RUNNING for x in mine)
        queued = [x for x in mine if x.state == RunState.QUEUED]
        queued.sort(key=lambda x: (x.logical_date, x.id), reverse=bool(row.reverse))
        out += queued[: max(row.max_active_runs - running, 0)]
    return out


def finish_runs_locked(
    conn: Connection, run_pks: Iterable[int], spec_of: SpecOf, now: datetime
) -> list[tuple[Any, str]]:
    """Finish those of the running runs ``run_pks`` whose tasks are all finished.

    The caller holds the runs' rows (``lock_runs``, or the worker's finishing
    transaction), so this decides from states no one else can change meanwhile. A
    run fails if any of its leaf tasks failed, was upstream_failed or cancelled, else
    it succeeds (a teardown is not a leaf unless ``on_failure_fail_dagrun``: the tasks
    before it are, issue 25); written compare-and-set on ``running``. Returns the (run, state)
    pairs it finished, in id order; a run has ``id``, ``run_id``, ``dag_id``,
    ``version_hash`` and ``backfill_id``. Four statements for any number of runs:
    which are done (an index probe per run, not a read of its open tasks: a run of many
    leaves asks at every leaf's success), one read of those with their failed task
    instances, one UPDATE per outcome, one INSERT of the events.
    """
    asked = set(run_pks)
    pks = runs_to_finish(conn, asked) if asked else []
    if not pks:
        return []
    by_id: dict[int, Any] = {}
    bad: dict[int, list[str]] = {}
    for row in conn.execute(_RUNS_WITH_BAD, {"ids": pks}):
        by_id.setdefault(row.id, row)
        if row.task_id is not None:
            bad.setdefault(row.id, []).append(row.task_id)
    outcome: dict[str, list[int]] = {RunState.SUCCESS: [], RunState.FAILED: []}
    for pk, x in by_id.items():
        leaves = set(spec_of(x.dag_id, x.version_hash).run_leaves)
        failed = any(task_id in leaves for task_id in bad.get(pk, ()))
        outcome[RunState.FAILED if failed else RunState.SUCCESS].append(pk)
    done: list[tuple[Any, str]] = []
    for state, ids in outcome.items():
        if ids:
            changed = conn.execute(_FINISH, {"ids": ids, "state": state, "now": now}).scalars()
            done += [(by_id[pk], str(state)) for pk in changed]
    done.sort(key=lambda d: d[0].id)
    if done:
        conn.execute(
            insert(m.events),
            [
                {
                    "at": now,
                    "kind": f"run_{state}",
                    "message": f"run {state}",
                    "dag_id": x.dag_id,
                    "run_id": x.run_id,
                    "task_id": None,
                    "try_number": None,
                }
                for x, state in done
            ],
        )
    return done


def runs_to_finish(conn: Connection, run_pks: Iterable[int] | None = None) -> list[int]:
    """Running runs (of ``run_pks``, if given) with every task instance finished: the
    scheduler's candidates, read without locks (:func:`finish_runs_locked` asks again
    under the runs' locks)."""
    if run_pks is None:
        return list(conn.execute(_READY_TO_FINISH).scalars())
    return list(conn.execute(_READY_TO_FINISH_OF, {"ids": sorted(run_pks)}).scalars())


def dags_to_start(conn: Connection, spec_of: SpecOf) -> list[str]:
    """Unpaused DAGs with a queued run that may start now, judged by a read.

    A DAG whose slots are all taken is left out: :func:`start_runs_locked` would
    start nothing, and whoever frees a slot starts the next run or wakes the
    scheduler. Three small reads, none of which grows with the number of queued runs
    (an index probe per DAG, the running runs, the running backfills).
    """
    running: dict[tuple[str, int | None], int] = {
        (row.dag_id, row.backfill_id): row.n for row in conn.execute(_RUNNING_COUNTS)
    }
    out, queued = set(), set()
    for row in conn.execute(_QUEUED_DAGS):
        queued.add(row.dag_id)
        spec = spec_of(row.dag_id, row.version_hash)
        limited = spec.overlap in ("allow", "queue")
        if row.regular and (
            not limited or running.get((row.dag_id, None), 0) < spec.max_active_runs
        ):
            out.add(row.dag_id)
    for row in conn.execute(_BACKFILLS_WAITING):
        if row.dag_id in queued and running.get((row.dag_id, row.id), 0) < row.max_active_runs:
            out.add(row.dag_id)
    return sorted(out)


def start_runs_locked(
    conn: Connection,
    dag_id: str,
    spec_of: SpecOf,
    now: datetime,
    *,
    is_postgres: bool,
    holding_runs: bool = False,
) -> Started | None:
    """Lock ``dag_id``'s row and start the queued runs it has room for.

    ``holding_runs``: the caller already holds run rows (it is finishing runs), so the
    DAG row is taken with ``SKIP LOCKED`` and no run is cancelled; None means "left to
    the scheduler" (the row was locked, or the overlap policy would cancel a run).
    A paused or deleted DAG starts nothing. Four statements: the DAG row (locked),
    its active runs that matter, the start, the root tasks.
    """
    lock = _DAG_ROW
    if is_postgres:
        lock = lock.with_for_update(skip_locked=holding_runs)
    dag = conn.execute(lock, {"dag_id": dag_id}).first()
    if dag is None:
        return None if holding_runs else Started([])
    if dag.is_paused:
        return Started([])
    spec = spec_of(dag_id, dag.version_hash)
    limited = spec.overlap in ("allow", "queue")
    # read after the lock (a fresh snapshot on PostgreSQL): every running run, every
    # queued backfill run, and the oldest queued runs that could fit (never more than
    # max_active_runs) or, for skip/replace, all of them (there are few)
    limit = spec.max_active_runs if limited else _NO_LIMIT
    runs = sorted(
        conn.execute(_ACTIVE, {"dag_id": dag_id, "limit": limit}),
        key=lambda x: (x.logical_date, x.id),
    )
    regular = [x for x in runs if x.backfill_id is None and x.state == RunState.RUNNING]
    queued = [x for x in runs if x.backfill_id is None and x.state == RunState.QUEUED]
    if limited:
        queued = queued[: max(spec.max_active_runs - len(regular), 0)]
    active = sorted(regular + queued, key=lambda x: (x.logical_date, x.id))
    to_start, to_cancel = overlap_plan(spec.overlap, spec.max_active_runs, active)
    to_start += backfill_starts(conn, [x for x in runs if x.backfill_id is not None])
    if to_cancel and holding_runs:
        return None
    for x in to_cancel:
        why = f"overlap={spec.overlap!r}: " + _SKIP_REASONS[spec.overlap]
        cancel_run_in(conn, x.id, dag_id, x.run_id, now, why)
    if not to_start:
        return Started([])
    started = conn.execute(_START, {"ids": sorted(x.id for x in to_start), "now": now}).all()
    return Started(
        [x.run_id for x in sorted(started, key=lambda x: x.id)],
        queue_roots(conn, started, spec_of, now),
    )


def queue_roots(conn: Connection, runs: Iterable[Any], spec_of: SpecOf, now: datetime) -> int:
    """Queue the root tasks (no upstream task) of just-started runs; how many moved.

    ``runs`` have ``id``, ``dag_id`` and ``version_hash``.
    Exactly what ``release_ready`` would decide for them: ``decide`` releases a task
    with no upstream tasks under every trigger rule.
    """
    by_version: dict[tuple[str, str], list[int]] = {}
    for x in runs:
        by_version.setdefault((x.dag_id, x.version_hash), []).append(x.id)
    queued = 0
    for (dag_id, version), pks in sorted(by_version.items()):
        spec = spec_of(dag_id, version)
        # a mapped root is expanded by release_ready (store/tasks/expansion.py), not queued here
        roots = sorted(t.task_id for t in spec.tasks.values() if not t.upstream and not t.mapped)
        queued += conn.execute(
            _QUEUE_ROOTS, {"pks": sorted(pks), "roots": roots, "now": now}
        ).rowcount
    return queued


_SKIP_REASONS = {
    "skip": "one active run at a time; skipped",
    "replace": "one active run at a time; replaced by a newer run",
    "buffer_one": "one active run and one waiting at most; skipped",
}


def overlap_plan(policy: str, max_active: int, runs: list) -> tuple[list, list]:
    """(runs to start, runs to cancel) of one DAG's active runs, oldest first.

    ``max_active`` is always 1 for queue/skip/replace/buffer_one (the DAG refuses
    more). ``buffer_one`` is Temporal's BUFFER_ONE: the oldest queued run that cannot
    start waits, every later one is skipped as soon as it is due.
    """
    running = [x for x in runs if x.state == RunState.RUNNING]
    queued = [x for x in runs if x.state == RunState.QUEUED]
    slots = max(max_active - len(running), 0)
    if policy == "skip":
        return queued[:slots], queued[slots:]
    if policy == "buffer_one":
        return queued[:slots], queued[slots + 1 :]
    if policy == "replace":
        keep = runs[-max_active:]  # the newest runs win
        kept = {x.id for x in keep}
        return [x for x in keep if x.state == RunState.QUEUED], [
            x for x in runs if x.id not in kept
        ]
    return queued[:slots], []  # "allow" and "queue": the rest wait


def cancel_run_in(
    conn: Connection,
    run_pk: int,
    dag_id: str,
    run_id: str,
    now: datetime,
    why: str,
    *,
    actor: str | None = None,
) -> bool:
    """Cancel an active run and its unfinished tasks and running tries; False if over."""
    tries = m.task_tries
    done = conn.execute(
        update(r)
        .where(r.c.id == run_pk, r.c.state.in_(list(RUN_ACTIVE)))
        .values(state=RunState.CANCELLED, end_date=now)
    ).rowcount
    if not done:
        return False
    run_tis = select(ti.c.id).where(ti.c.run_pk == run_pk).scalar_subquery()
    conn.execute(
        update(tries)
        # a sensor's try between pokes is open too (issue 15)
        # and a deferred one's (issue 30)
        .where(
            tries.c.ti_id.in_(run_tis),
            tries.c.state.in_(("running", "up_for_reschedule", "deferred")),
        )
        .values(state="cancelled", end_date=now, error=why)
    )
    conn.execute(
        update(ti)
        .where(ti.c.run_pk == run_pk, ti.c.state.in_(list(TASK_UNFINISHED)))
        .values(state=TaskState.CANCELLED, end_date=now, lease_expires_at=None)
    )
    record_event(conn, now, "run_cancelled", why, dag_id=dag_id, run_id=run_id, actor=actor)
    log.info("run cancelled dag_id=%s run_id=%s: %s", dag_id, run_id, why)
    return True


# built once: these run for every batch of finished or started runs, or every tick
_OPEN = ti.alias("open_ti")
_UNFINISHED_TASK = (  # an index range per unfinished state on (run_pk, state), each
    # stopping at its first entry (NOT IN finished would walk the run's finished tasks)
    select(_OPEN.c.id)
    .where(_OPEN.c.run_pk == r.c.id, _OPEN.c.state.in_(sorted(TASK_UNFINISHED)))
    .exists()
)
_READY_TO_FINISH = select(r.c.id).where(r.c.state == RunState.RUNNING, ~_UNFINISHED_TASK)
_READY_TO_FINISH_OF = _READY_TO_FINISH.where(r.c.id.in_(bindparam("ids", expanding=True)))
_RUNNING_COUNTS = (
    select(r.c.dag_id, r.c.backfill_id, func.count().label("n"))
    .where(r.c.state == RunState.RUNNING)
    .group_by(r.c.dag_id, r.c.backfill_id)
)
_QUEUED = select(r.c.id).where(r.c.dag_id == m.dags.c.dag_id, r.c.state == RunState.QUEUED)
# driven by the queued runs (an index range on (state, dag_id)), never by every DAG:
# an idle tick at 10,000 DAGs reads no DAG row here (issue 29)
_QUEUED_DAGS = select(
    m.dags.c.dag_id,
    m.dags.c.version_hash,
    _QUEUED.where(r.c.backfill_id.is_(None)).exists().label("regular"),
).where(
    m.dags.c.is_paused.is_(False),
    m.dags.c.dag_id.in_(select(r.c.dag_id).where(r.c.state == RunState.QUEUED).distinct()),
)
_BACKFILLS_WAITING = select(
    m.backfills.c.id, m.backfills.c.dag_id, m.backfills.c.max_active_runs
).where(
    m.backfills.c.state == "running",
    select(r.c.id)
    .where(r.c.backfill_id == m.backfills.c.id, r.c.state == RunState.QUEUED)
    .exists(),
)
_RUNS_WITH_BAD = (
    select(r.c.id, r.c.run_id, r.c.dag_id, r.c.version_hash, r.c.backfill_id, ti.c.task_id)
    .select_from(r.outerjoin(ti, and_(ti.c.run_pk == r.c.id, ti.c.state.in_(sorted(_BAD)))))
    .where(r.c.id.in_(bindparam("ids", expanding=True)), r.c.state == RunState.RUNNING)
    .order_by(r.c.id)
)
_FINISH = (
    update(r)
    .where(r.c.id.in_(bindparam("ids", expanding=True)), r.c.state == RunState.RUNNING)
    .values(state=bindparam("state"), end_date=bindparam("now"))
    .returning(r.c.id)
)
_RUN_COLUMNS = (r.c.id, r.c.run_id, r.c.state, r.c.logical_date, r.c.backfill_id)
_DAG_ROW = select(m.dags.c.version_hash, m.dags.c.is_paused).where(
    m.dags.c.dag_id == bindparam("dag_id")
)
_OLDEST_QUEUED = (
    select(*_RUN_COLUMNS)
    .where(
        r.c.dag_id == bindparam("dag_id"),
        r.c.state == RunState.QUEUED,
        r.c.backfill_id.is_(None),
    )
    .order_by(r.c.logical_date, r.c.id)
    .limit(bindparam("limit"))
    .subquery()
)
# three index ranges on (state, dag_id), never the DAG's history: its running runs,
# its queued backfill runs, its oldest queued other runs
_ACTIVE = union_all(
    select(*_RUN_COLUMNS).where(r.c.dag_id == bindparam("dag_id"), r.c.state == RunState.RUNNING),
    select(*_RUN_COLUMNS).where(
        r.c.dag_id == bindparam("dag_id"),
        r.c.state == RunState.QUEUED,
        r.c.backfill_id.is_not(None),
    ),
    select(*_OLDEST_QUEUED.c),
)
_QUEUE_ROOTS = (
    update(ti)
    .where(
        ti.c.run_pk.in_(bindparam("pks", expanding=True)),
        ti.c.task_id.in_(bindparam("roots", expanding=True)),
        ti.c.state == TaskState.SCHEDULED,
    )
    .values(state=TaskState.QUEUED, ready_at=bindparam("now"))
)
_START = (
    update(r)
    .where(r.c.id.in_(bindparam("ids", expanding=True)), r.c.state == RunState.QUEUED)
    .values(state=RunState.RUNNING, start_date=bindparam("now"))
    .returning(r.c.id, r.c.run_id, r.c.dag_id, r.c.version_hash)
)
