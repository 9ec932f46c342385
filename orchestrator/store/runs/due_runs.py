"""Scheduled runs of the DAGs that are due, a bounded batch per transaction (issue 29).

A DAG is due once its ``next_dagrun_create_after`` has passed (migration 0034: its
schedule cursor, or the time a new or changed schedule was stored; NULL when the
scheduler has nothing to create for it). :meth:`DueRunStore.create_due_runs` takes the
oldest due DAGs, at most ``limit``, in one write transaction: their rows are locked
(``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so several schedulers take different DAGs at
once; SQLite's writer lock serialises them), the misfire plan is made for each from the
cursor read under that lock, the cursors move, and the runs, their task instances and
their events are inserted a few statements for the whole batch. A new run of a DAG with
no other run queued or running starts in the same transaction and its root tasks are
queued, exactly as ``start_runs`` would decide it; any other case (a run still going,
an overlap policy that cancels, a backfill) stays queued for ``start_runs`` or for the
worker that finishes the run before it.

An idle tick costs one indexed read, whatever the number of DAGs; a minute of 10,000
minutely DAGs costs about ten statements per batch of DAGs instead of a transaction of
four statements per DAG for the creation and another for the start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, tuple_, update

from orchestrator.authoring.spec import DagSpec
from orchestrator.scheduling.misfire import Plan, data_intervals
from orchestrator.states import RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.runs.run_progress import Started, overlap_plan
from orchestrator.store.runs.run_rows import insert_runs_of

# (spec, cursor, has_history, most fire times) -> the misfire plan, or None for nothing
# to do now
Decide = Callable[[DagSpec, datetime | None, bool, int], Plan | None]
RUNS_PER_BATCH = 2000  # runs one transaction creates at most (a catch-up of many DAGs)

d = m.dags
r = m.dag_runs
ti = m.task_instances

_DUE = (
    select(d.c.dag_id, d.c.version_hash, d.c.next_logical_date)
    .where(
        d.c.next_dagrun_create_after <= bindparam("now"),
        d.c.is_active.is_(True),
        d.c.is_paused.is_(False),
        d.c.schedule_exhausted.is_(False),
    )
    .order_by(d.c.next_dagrun_create_after, d.c.dag_id)
    .limit(bindparam("limit"))
)
_NEXT_DUE = select(func.min(d.c.next_dagrun_create_after)).where(
    d.c.is_active.is_(True), d.c.is_paused.is_(False), d.c.schedule_exhausted.is_(False)
)
# the cursor moves only from the value read under the row lock: a compare-and-set,
# checked by its row count, so a batch never moves a cursor someone else moved
_MOVE = (
    update(d)
    .where(
        d.c.dag_id == bindparam("b_dag_id"),
        d.c.next_logical_date.is_not_distinct_from(bindparam("b_cursor")),
        d.c.schedule_exhausted.is_(False),
    )
    .values(
        next_logical_date=bindparam("b_new_cursor"),
        next_dagrun_create_after=bindparam("b_create_after"),
        schedule_exhausted=bindparam("b_exhausted"),
    )
)
_HISTORY = (
    select(r.c.dag_id)
    .where(r.c.dag_id.in_(bindparam("ids", expanding=True)), r.c.run_type == "scheduled")
    .group_by(r.c.dag_id)
)
# the batch's DAGs that have a run queued or running other than the ones just made
_BUSY = (
    select(r.c.dag_id, func.count().label("n"))
    .where(
        r.c.dag_id.in_(bindparam("ids", expanding=True)),
        r.c.state.in_([RunState.QUEUED, RunState.RUNNING]),
        r.c.id.not_in(bindparam("new", expanding=True)),
    )
    .group_by(r.c.dag_id)
)
_START = (
    update(r)
    .where(r.c.id.in_(bindparam("ids", expanding=True)), r.c.state == RunState.QUEUED)
    .values(state=RunState.RUNNING, start_date=bindparam("now"))
)


class CursorRaced(Exception):
    """A cursor read under its row lock had moved by the time it was written."""


@dataclass(frozen=True)
class DueBatch:
    """What one :meth:`DueRunStore.create_due_runs` call did."""

    looked_at: int  # due DAGs decided
    created: int  # runs created
    started: Started = field(default_factory=lambda: Started([]))
    more: bool = False  # more DAGs may be due: the batch was full


@dataclass(frozen=True)
class _NewRun:  # what overlap_plan needs of a run
    id: int
    logical_date: datetime
    state: str = RunState.QUEUED


class DueRunStore(StoreBase):
    def create_due_runs(
        self,
        now: datetime,
        decide: Decide,
        *,
        limit: int = 200,
        runs_per_batch: int = RUNS_PER_BATCH,
    ) -> DueBatch:
        """Create the runs of up to ``limit`` due DAGs in one transaction (see the
        module), at most ``runs_per_batch`` runs: a step stays short (the lease, a stop
        request) even when every DAG catches up hundreds of fire times."""
        with self.read() as conn:  # an idle tick: one indexed read, no write lock
            peek = conn.execute(_DUE, {"now": now, "limit": limit}).all()
        if not peek:
            return DueBatch(0, 0)
        # the specs are read before the locks are taken: a batch of new DAGs must not
        # hold its rows (and stay idle in its transaction) while they are loaded
        self.preload_specs((row.dag_id, row.version_hash) for row in peek)  # type: ignore[attr-defined]
        # and so are the plans (the CPU of the batch): one made from the same version and
        # cursor as the row read under the lock is that row's plan, since a plan depends
        # on nothing else (a DAG whose cursor is NULL also on whether it has scheduled
        # runs: those move its cursor, so they cannot appear while it stays NULL)
        with self.read() as conn:
            fresh = [row.dag_id for row in peek if row.next_logical_date is None]
            history = set(conn.execute(_HISTORY, {"ids": fresh}).scalars()) if fresh else set()
        planned = {
            (row.dag_id, row.version_hash, row.next_logical_date): decide(
                self.spec(row.dag_id, row.version_hash),  # type: ignore[attr-defined]
                row.next_logical_date,
                row.dag_id in history,
                runs_per_batch,
            )
            for row in peek
        }
        q = _DUE.with_for_update(skip_locked=True) if self.is_postgres else _DUE
        with self.write() as conn:
            rows = conn.execute(q, {"now": now, "limit": limit}).all()
            if not rows:
                return DueBatch(0, 0)
            fresh = [
                row.dag_id
                for row in rows
                if row.next_logical_date is None and row.dag_id not in history
            ]
            if fresh:  # new since the peek: asked again under the lock
                history |= set(conn.execute(_HISTORY, {"ids": fresh}).scalars())
            moves, groups, events = [], [], []
            budget = runs_per_batch
            for row in rows:
                if budget <= 0:  # the rest stay due for the next batch
                    break
                spec = self.spec(row.dag_id, row.version_hash)  # type: ignore[attr-defined]
                cursor = row.next_logical_date
                key = (row.dag_id, row.version_hash, cursor)
                decided = planned.get(key)
                if key not in planned or (decided and len(decided.fire_times) > budget):
                    decided = decide(spec, cursor, row.dag_id in history, budget)
                if decided is not None:
                    budget -= len(decided.fire_times)
                if decided is None:  # manual only, no fire time at all, or not yet due
                    after = cursor if cursor is not None and cursor > now else None
                    new_cursor, exhausted = cursor, False
                else:
                    new_cursor = after = decided.new_cursor
                    exhausted = new_cursor is None
                    for kind, message in decided.decisions:
                        events.append(_event(now, kind, message, row.dag_id))
                    if exhausted:
                        events.append(
                            _event(now, "schedule_exhausted", "no fire times left", row.dag_id)
                        )
                    if decided.fire_times:
                        groups.append(
                            (
                                spec,
                                row.version_hash,
                                data_intervals(spec.schedule, decided.fire_times),
                            )
                        )
                moves.append(
                    {
                        "b_dag_id": row.dag_id,
                        "b_cursor": cursor,
                        "b_new_cursor": new_cursor,
                        "b_create_after": after,
                        "b_exhausted": exhausted,
                    }
                )
            moved = conn.execute(_MOVE, moves).rowcount
            if moved != len(moves):  # impossible under the locks; never write on a race
                raise CursorRaced(f"{len(moves) - moved} schedule cursor(s) moved under a batch")
            if events:
                conn.execute(insert(m.events), events)
            created = insert_runs_of(conn, groups, run_type="scheduled", conf={}, now=now)
            new = {
                spec.dag_id: (spec, [_NewRun(pk, when) for when, pk in made.items()])
                for (spec, _, _), made in zip(groups, created, strict=True)
                if made
            }
            started = self._start_new_runs(conn, new, now)
        return DueBatch(
            len(moves),
            sum(len(x) for x in created),
            started,
            more=len(rows) == limit or len(moves) < len(rows),
        )

    def next_due_at(self) -> datetime | None:
        """When the next DAG falls due (its ``next_dagrun_create_after``), or None."""
        with self.read() as conn:
            return conn.execute(_NEXT_DUE).scalar()

    def _start_new_runs(
        self, conn: Any, new: dict[str, tuple[DagSpec, list[_NewRun]]], now: datetime
    ) -> Started:
        """Start the new runs of DAGs that have no other run queued or running, and
        queue their root tasks: what ``start_runs_locked`` decides for such a DAG,
        for the whole batch at once. The rows are the caller's (locked)."""
        if not new:
            return Started([])
        every = [x.id for _, runs in new.values() for x in runs]
        busy = {row.dag_id for row in conn.execute(_BUSY, {"ids": sorted(new), "new": every})}
        to_start: list[int] = []
        roots: list[tuple[int, str]] = []
        for dag_id, (spec, runs) in sorted(new.items()):
            if dag_id in busy:
                continue  # left to start_runs, or to whoever finishes the run before
            start, cancel = overlap_plan(
                spec.overlap, spec.max_active_runs, sorted(runs, key=lambda x: x.logical_date)
            )
            if cancel:
                continue  # an overlap policy that cancels: start_runs records why
            names = [t.task_id for t in spec.tasks.values() if not t.upstream and not t.mapped]
            for x in start:
                to_start.append(x.id)
                roots += [(x.id, name) for name in names]
        if not to_start:
            return Started([])
        conn.execute(_START, {"ids": sorted(to_start), "now": now})
        queued = 0
        for i in range(0, len(roots), 500):
            queued += conn.execute(
                update(ti)
                .where(
                    tuple_(ti.c.run_pk, ti.c.task_id).in_(roots[i : i + 500]),
                    ti.c.state == TaskState.SCHEDULED,
                )
                .values(state=TaskState.QUEUED, ready_at=now)
            ).rowcount
        run_ids = conn.execute(
            select(r.c.run_id).where(r.c.id.in_(sorted(to_start))).order_by(r.c.id)
        ).scalars()
        return Started(list(run_ids), queued)


def _event(now: datetime, kind: str, message: str, dag_id: str) -> dict:
    return {
        "at": now,
        "kind": kind,
        "message": message,
        "dag_id": dag_id,
        "run_id": None,
        "task_id": None,
        "try_number": None,
        "actor": None,
    }
