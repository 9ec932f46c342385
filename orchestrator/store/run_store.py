"""DAG runs: creation (exactly once per fire time), start, finish and listing."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from orchestrator.errors import ConfigError, NotFoundError, StateError
from orchestrator.spec import DagSpec, validate_conf
from orchestrator.states import (
    RUN_ACTIVE,
    TASK_FINISHED,
    TASK_UNFINISHED,
    RunState,
    TaskState,
)
from orchestrator.store import models as m
from orchestrator.store.backfill_store import backfill_starts
from orchestrator.store.base import StoreBase, lock_runs, record_event
from orchestrator.store.records import RunRecord

log = logging.getLogger(__name__)


def make_run_id(dag_id: str, run_type: str, logical_date: datetime) -> str:
    stamp = logical_date.strftime("%Y%m%dT%H%M%S")
    if logical_date.microsecond:
        stamp += f".{logical_date.microsecond:06d}"
    return f"{dag_id}__{run_type}__{stamp}Z"


def insert_run(
    conn: Connection,
    spec: DagSpec,
    version_hash: str,
    *,
    run_type: str,
    logical_date: datetime,
    interval: tuple[datetime, datetime],
    conf: dict,
    now: datetime,
    backfill_id: int | None = None,
) -> int | None:
    """Insert a run and its task instances; None if the run already exists.

    Scheduled and backfill runs are unique per (dag_id, logical_date) (a partial
    unique index: invariant 1); manual runs only per run_id, so a manual run for a
    fire time never blocks or displaces the scheduled run of that time.
    """
    run_id = make_run_id(spec.dag_id, run_type, logical_date)
    try:
        with conn.begin_nested():
            run_pk = conn.execute(
                insert(m.dag_runs)
                .values(
                    run_id=run_id,
                    dag_id=spec.dag_id,
                    version_hash=version_hash,
                    run_type=run_type,
                    logical_date=logical_date,
                    data_interval_start=interval[0],
                    data_interval_end=interval[1],
                    state=RunState.QUEUED,
                    conf=json.dumps(conf),
                    created_at=now,
                    backfill_id=backfill_id,
                )
                .returning(m.dag_runs.c.id)
            ).scalar_one()
    except IntegrityError:
        log.info("run of dag_id=%s at %s exists already", spec.dag_id, logical_date.isoformat())
        return None
    conn.execute(
        insert(m.task_instances),
        [
            {
                "run_pk": run_pk,
                "dag_id": spec.dag_id,
                "run_id": run_id,
                "task_id": t.task_id,
                "state": TaskState.SCHEDULED,
                "try_number": 0,
                "max_tries": t.max_tries,
                "queue": t.queue,
                "pool": t.pool,
                "pool_slots": t.pool_slots,
            }
            for t in spec.tasks.values()
        ],
    )
    record_event(
        conn,
        now,
        "run_created",
        f"{run_type} run for {logical_date.isoformat()} created",
        dag_id=spec.dag_id,
        run_id=run_id,
    )
    return run_pk


def finish_run_locked(conn: Connection, spec: DagSpec, run: Any, now: datetime) -> str | None:
    """Finish a running run whose task instances are all finished; its row is locked.

    A run fails if any of its leaf tasks failed, was upstream_failed or cancelled,
    else it succeeds. Returns the new state, or None if the run is not finished yet
    (or not running). ``run`` has ``id``, ``run_id`` and ``dag_id``.
    """
    ti = m.task_instances
    unfinished = conn.execute(
        select(ti.c.id)
        .where(ti.c.run_pk == run.id, ti.c.state.not_in(list(TASK_FINISHED)))
        .limit(1)
    ).first()
    if unfinished is not None:
        return None
    bad = [TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED]
    failed = conn.execute(
        select(ti.c.id)
        .where(ti.c.run_pk == run.id, ti.c.task_id.in_(spec.leaves), ti.c.state.in_(bad))
        .limit(1)
    ).first()
    state = RunState.FAILED if failed else RunState.SUCCESS
    done = conn.execute(
        update(m.dag_runs)
        .where(m.dag_runs.c.id == run.id, m.dag_runs.c.state == RunState.RUNNING)
        .values(state=state, end_date=now)
    ).rowcount
    if not done:
        return None
    record_event(conn, now, f"run_{state}", f"run {state}", dag_id=run.dag_id, run_id=run.run_id)
    return str(state)


class RunStore(StoreBase):
    def create_scheduled_runs(
        self,
        dag_id: str,
        version_hash: str,
        *,
        cursor: datetime | None,
        new_cursor: datetime | None,
        fire_times: list[tuple[datetime, tuple[datetime, datetime]]],
        decisions: list[tuple[str, str]],
        now: datetime,
    ) -> int:
        """Create runs for ``fire_times`` and move the DAG's schedule cursor, atomically.

        The cursor move is a compare-and-set: if another scheduler moved it first, this
        creates nothing and returns 0. ``decisions`` are (kind, message) events (skipped,
        coalesced fire times) recorded in the same transaction.
        """
        spec = self.spec(dag_id, version_hash)  # type: ignore[attr-defined]
        d = m.dags
        cond = (
            d.c.next_logical_date.is_(None) if cursor is None else d.c.next_logical_date == cursor
        )
        exhausted = new_cursor is None
        created = 0
        with self.write() as conn:
            moved = conn.execute(
                update(d)
                .where(d.c.dag_id == dag_id, cond, d.c.schedule_exhausted.is_(False))
                .values(next_logical_date=new_cursor, schedule_exhausted=exhausted)
            ).rowcount
            if not moved:
                return 0
            for kind, message in decisions:
                record_event(conn, now, kind, message, dag_id=dag_id)
            if exhausted:
                record_event(conn, now, "schedule_exhausted", "no fire times left", dag_id=dag_id)
            for logical_date, interval in fire_times:
                pk = insert_run(
                    conn,
                    spec,
                    version_hash,
                    run_type="scheduled",
                    logical_date=logical_date,
                    interval=interval,
                    conf={},
                    now=now,
                )
                created += pk is not None
        return created

    def trigger_run(
        self,
        dag_id: str,
        now: datetime,
        *,
        conf: dict | None = None,
        logical_date: datetime | None = None,
        run_type: str = "manual",
    ) -> RunRecord:
        """Create a run outside the schedule (``dags trigger``).

        ``conf`` is checked against the DAG's declared params (names and JSON types of
        their defaults) before anything is written: a bad one raises ConfigError.
        """
        dag = self.get_dag(dag_id)  # type: ignore[attr-defined]
        spec = self.spec(dag_id, dag.version_hash)  # type: ignore[attr-defined]
        when = logical_date or now
        if when.tzinfo is None:
            raise ConfigError(f"logical_date {when.isoformat()} must be timezone-aware")
        validate_conf(spec, conf or {})
        with self.write() as conn:
            pk = insert_run(
                conn,
                spec,
                dag.version_hash,
                run_type=run_type,
                logical_date=when,
                interval=(when, when),
                conf=conf or {},
                now=now,
            )
        if pk is None:
            raise StateError(f"DAG {dag_id!r} already has a run at {when.isoformat()}")
        return self.get_run(make_run_id(dag_id, run_type, when))

    def start_queued_runs(self, now: datetime) -> list[str]:
        """Start queued runs of unpaused DAGs, oldest first, per max_active_runs and overlap.

        Scheduled and manual runs follow the DAG's ``overlap`` policy: ``allow`` starts
        up to ``max_active_runs`` at once and the rest wait; ``queue``, ``skip`` and
        ``replace`` run one at a time (max_active_runs is 1), a newer run waiting,
        being skipped (cancelled) or cancelling the active one. Backfill runs are
        started by their backfill's own ``max_active_runs`` and order (oldest first,
        or newest first with ``reverse``), independently of the DAG's other runs.
        Each DAG's slots are counted and taken in one write transaction that first
        locks the DAG's row (``FOR UPDATE`` on PostgreSQL; SQLite's writer lock does
        it there), so two schedulers overlapping never start more runs than allowed.
        """
        r = m.dag_runs
        started: list[str] = []
        with self.read() as conn:
            dag_ids = (
                conn.execute(
                    select(r.c.dag_id)
                    .join(m.dags, m.dags.c.dag_id == r.c.dag_id)
                    .where(r.c.state == RunState.QUEUED, m.dags.c.is_paused.is_(False))
                    .distinct()
                    .order_by(r.c.dag_id)
                )
                .scalars()
                .all()
            )
        for dag_id in dag_ids:
            with self.write() as conn:
                lock = select(m.dags.c.version_hash, m.dags.c.is_paused).where(
                    m.dags.c.dag_id == dag_id
                )
                if self.is_postgres:
                    lock = lock.with_for_update()
                dag = conn.execute(lock).first()
                if dag is None or dag.is_paused:
                    continue
                spec = self.spec(dag_id, dag.version_hash)  # type: ignore[attr-defined]
                runs = conn.execute(
                    select(r.c.id, r.c.run_id, r.c.state, r.c.logical_date, r.c.backfill_id)
                    .where(r.c.dag_id == dag_id, r.c.state.in_(list(RUN_ACTIVE)))
                    .order_by(r.c.logical_date, r.c.id)
                ).all()
                regular = [x for x in runs if x.backfill_id is None]
                to_start, to_cancel = _overlap_plan(spec.overlap, spec.max_active_runs, regular)
                to_start += backfill_starts(conn, [x for x in runs if x.backfill_id is not None])
                for x in to_cancel:
                    why = f"overlap={spec.overlap!r}: one active run at a time; " + (
                        "replaced by a newer run" if spec.overlap == "replace" else "skipped"
                    )
                    _cancel(conn, x.id, dag_id, x.run_id, now, why)
                for x in to_start:
                    done = conn.execute(
                        update(r)
                        .where(r.c.id == x.id, r.c.state == RunState.QUEUED)
                        .values(state=RunState.RUNNING, start_date=now)
                    ).rowcount
                    if done:
                        started.append(x.run_id)
        return started

    def cancel_run(self, run_id: str, now: datetime, reason: str = "cancelled by a user") -> bool:
        """Cancel a queued or running run and its unfinished tasks; False if already over.

        Running tries are closed as ``cancelled``; their workers find out at their next
        heartbeat (the lease is no longer theirs), kill the task, and any late report
        is fenced out.
        """
        run = self.get_run(run_id)
        with self.write() as conn:
            return _cancel(conn, run.id, run.dag_id, run.run_id, now, reason)

    def finish_runs(self, now: datetime, run_pks: list[int] | None = None) -> list[tuple[str, str]]:
        """Finish running runs whose task instances are all finished.

        A run fails if any of its leaf tasks failed or was upstream_failed, else it
        succeeds. Returns (run_id, state) pairs.
        """
        r, ti = m.dag_runs, m.task_instances
        unfinished = (
            select(ti.c.id)
            .where(ti.c.run_pk == r.c.id, ti.c.state.not_in(list(TASK_FINISHED)))
            .exists()
        )
        q = select(r.c.id, r.c.run_id, r.c.dag_id, r.c.version_hash).where(
            r.c.state == RunState.RUNNING, ~unfinished
        )
        if run_pks is not None:
            q = q.where(r.c.id.in_(run_pks))
        out = []
        with self.read() as conn:
            candidates = conn.execute(q).all()
        if not candidates:
            return out
        # one transaction for all of them: runs locked in id order, each decided again
        # from the states read under its lock
        with self.write() as conn:
            lock_runs(conn, [c.id for c in candidates], self.is_postgres)
            for c in sorted(candidates, key=lambda c: c.id):
                spec = self.spec(c.dag_id, c.version_hash)  # type: ignore[attr-defined]
                state = finish_run_locked(conn, spec, c, now)
                if state:
                    out.append((c.run_id, state))
        return out

    # -- reads ---------------------------------------------------------------------------
    def get_run(self, run_id: str) -> RunRecord:
        with self.read() as conn:
            row = conn.execute(select(m.dag_runs).where(m.dag_runs.c.run_id == run_id)).first()
        if row is None:
            raise NotFoundError(f"no run with run_id {run_id!r}")
        return RunRecord.from_row(row)

    def list_runs(
        self, dag_id: str | None = None, state: str | None = None, limit: int = 50
    ) -> list[RunRecord]:
        r = m.dag_runs
        q = select(r).order_by(r.c.logical_date.desc(), r.c.id.desc()).limit(limit)
        if dag_id is not None:
            q = q.where(r.c.dag_id == dag_id)
        if state is not None:
            q = q.where(r.c.state == state)
        with self.read() as conn:
            return [RunRecord.from_row(row) for row in conn.execute(q)]

    def count_runs(self, dag_id: str | None = None) -> dict[str, int]:
        r = m.dag_runs
        q = select(r.c.state, func.count()).group_by(r.c.state)
        if dag_id:
            q = q.where(r.c.dag_id == dag_id)
        with self.read() as conn:
            return dict(conn.execute(q).all())

    def latest_run_date(self, dag_id: str) -> datetime | None:
        r = m.dag_runs
        with self.read() as conn:
            return conn.execute(
                select(func.max(r.c.logical_date)).where(
                    and_(r.c.dag_id == dag_id, r.c.run_type == "scheduled")
                )
            ).scalar()


def _overlap_plan(policy: str, max_active: int, runs: list) -> tuple[list, list]:
    """(runs to start, runs to cancel) of one DAG's active runs, oldest first.

    ``max_active`` is always 1 for queue/skip/replace (the DAG refuses more).
    """
    running = [x for x in runs if x.state == RunState.RUNNING]
    queued = [x for x in runs if x.state == RunState.QUEUED]
    slots = max(max_active - len(running), 0)
    if policy == "skip":
        return queued[:slots], queued[slots:]
    if policy == "replace":
        keep = runs[-max_active:]  # the newest runs win
        kept = {x.id for x in keep}
        return [x for x in keep if x.state == RunState.QUEUED], [
            x for x in runs if x.id not in kept
        ]
    return queued[:slots], []  # "allow" and "queue": the rest wait


def _cancel(
    conn: Connection, run_pk: int, dag_id: str, run_id: str, now: datetime, why: str
) -> bool:
    r, ti, tries = m.dag_runs, m.task_instances, m.task_tries
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
        .where(tries.c.ti_id.in_(run_tis), tries.c.state == "running")
        .values(state="cancelled", end_date=now, error=why)
    )
    conn.execute(
        update(ti)
        .where(ti.c.run_pk == run_pk, ti.c.state.in_(list(TASK_UNFINISHED)))
        .values(state=TaskState.CANCELLED, end_date=now, lease_expires_at=None)
    )
    record_event(conn, now, "run_cancelled", why, dag_id=dag_id, run_id=run_id)
    log.info("run cancelled dag_id=%s run_id=%s: %s", dag_id, run_id, why)
    return True
