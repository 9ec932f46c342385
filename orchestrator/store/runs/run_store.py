"""DAG runs: creation (exactly once per fire time), start, finish and listing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, func, select, update

from orchestrator.authoring.spec import MAX_CONF_BYTES, validate_conf
from orchestrator.errors import ConfigError, NotFoundError, StateError
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, lock_runs, record_event
from orchestrator.store.core.records import RunRecord
from orchestrator.store.runs.run_progress import (
    Started,
    cancel_run_in,
    dags_to_start,
    finish_runs_locked,
    runs_to_finish,
    start_runs_locked,
)
from orchestrator.store.runs.run_rows import insert_run, insert_runs, make_run_id

log = logging.getLogger(__name__)
_START_CHUNK = 50  # DAGs whose queued runs one write transaction starts


@dataclass(frozen=True)
class Advanced:
    """What :meth:`RunStore.advance_runs_locked` did."""

    finished: list[tuple[str, str]]  # (run_id, state), in run id order
    started: Started  # runs started in the freed slots, root tasks queued
    needs_scheduler: bool  # something is left that only the scheduler decides


class RunStore(StoreBase):
    # the largest conf a trigger may store; set from settings.max_conf_bytes by its owner
    max_conf_bytes: int = MAX_CONF_BYTES

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
        coalesced fire times) recorded in the same transaction. The runs are inserted in
        bulk (:func:`insert_runs`); a fire time that already has a scheduled or backfill
        run is skipped by the unique index. Returns how many runs were created.
        """
        spec = self.spec(dag_id, version_hash)  # type: ignore[attr-defined]
        d = m.dags
        cond = (
            d.c.next_logical_date.is_(None) if cursor is None else d.c.next_logical_date == cursor
        )
        exhausted = new_cursor is None
        with self.write() as conn:
            moved = conn.execute(
                update(d)
                .where(d.c.dag_id == dag_id, cond, d.c.schedule_exhausted.is_(False))
                .values(
                    next_logical_date=new_cursor,
                    next_dagrun_create_after=new_cursor,
                    schedule_exhausted=exhausted,
                )
            ).rowcount
            if not moved:
                return 0
            for kind, message in decisions:
                record_event(conn, now, kind, message, dag_id=dag_id)
            if exhausted:
                record_event(conn, now, "schedule_exhausted", "no fire times left", dag_id=dag_id)
            created = insert_runs(
                conn,
                spec,
                version_hash,
                run_type="scheduled",
                fire_times=fire_times,
                conf={},
                now=now,
            )
        return len(created)

    def trigger_run(
        self,
        dag_id: str,
        now: datetime,
        *,
        conf: dict | None = None,
        logical_date: datetime | None = None,
        run_type: str = "manual",
        triggered_by: str | None = None,
    ) -> RunRecord:
        """Create a run outside the schedule (``dags trigger``, the UI, the API).

        ``conf`` is checked against the DAG's declared params (names and JSON types of
        their defaults) before anything is written: a bad one raises ConfigError.
        ``triggered_by`` says who asked (``cli:USER@HOST``, ``web:USER``, ``api:USER``);
        it is stored on the run and named in its ``run_created`` event.
        """
        dag = self.get_dag(dag_id)  # type: ignore[attr-defined]
        spec = self.spec(dag_id, dag.version_hash)  # type: ignore[attr-defined]
        when = logical_date or now
        if when.tzinfo is None:
            raise ConfigError(f"logical_date {when.isoformat()} must be timezone-aware")
        validate_conf(spec, conf or {}, max_bytes=self.max_conf_bytes)
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
                triggered_by=triggered_by,
            )
        if pk is None:
            raise StateError(f"DAG {dag_id!r} already has a run at {when.isoformat()}")
        return self.get_run(make_run_id(dag_id, run_type, when))

    def start_queued_runs(self, now: datetime) -> list[str]:
        """Start queued runs of unpaused DAGs, oldest first, per max_active_runs and overlap.

        Returns the started run_ids; :meth:`start_runs` also says how many root tasks
        it queued.
        """
        return self.start_runs(now).run_ids

    def start_runs(
        self,
        now: datetime,
        *,
        limit: int | None = None,
        between: Callable[[], None] | None = None,
    ) -> Started:
        """Start queued runs of unpaused DAGs and queue their root tasks.

        Scheduled and manual runs follow the DAG's ``overlap`` policy: ``allow`` starts
        up to ``max_active_runs`` at once and the rest wait; ``queue``, ``skip`` and
        ``replace`` run one at a time (max_active_runs is 1), a newer run waiting,
        being skipped (cancelled) or cancelling the active one. Backfill runs are
        started by their backfill's own ``max_active_runs`` and order (oldest first,
        or newest first with ``reverse``), independently of the DAG's other runs.
        Each DAG's slots are counted and taken in one write transaction that first
        locks the DAG's row (``FOR UPDATE`` on PostgreSQL; SQLite's writer lock does
        it there), so two schedulers overlapping never start more runs than allowed.
        A DAG whose runs cannot start now (every slot taken, by a read of the counts)
        costs no write transaction; whoever frees a slot starts the next run or wakes
        the scheduler, and the next tick reads the counts again.

        Issue 29: ``_START_CHUNK`` DAGs share a write transaction (their rows locked in
        id order), ``limit`` bounds the DAGs of one call (``more`` says some were
        left), and ``between`` is called before each transaction (the scheduler's
        lease check, which may raise to stop).
        """
        run_ids: list[str] = []
        queued = 0
        with self.read() as conn:
            dag_ids = dags_to_start(conn, self.spec)  # type: ignore[attr-defined]
        more = limit is not None and len(dag_ids) > limit
        if more:
            dag_ids = dag_ids[:limit]
        for i in range(0, len(dag_ids), _START_CHUNK):
            if between is not None:
                between()
            with self.write() as conn:
                for dag_id in dag_ids[i : i + _START_CHUNK]:
                    started = start_runs_locked(
                        conn,
                        dag_id,
                        self.spec,  # type: ignore[attr-defined]
                        now,
                        is_postgres=self.is_postgres,
                    )
                    if started is not None:
                        run_ids += started.run_ids
                        queued += started.tasks_queued
        return Started(run_ids, queued, more)

    def cancel_run(
        self,
        run_id: str,
        now: datetime,
        reason: str = "cancelled by a user",
        *,
        who: str | None = None,
    ) -> bool:
        """Cancel a queued or running run and its unfinished tasks; False if already over.

        Running tries are closed as ``cancelled``; their workers find out at their next
        heartbeat (the lease is no longer theirs), kill the task, and any late report
        is fenced out. ``who`` asked (the event's actor).
        """
        run = self.get_run(run_id)
        with self.write() as conn:
            return cancel_run_in(conn, run.id, run.dag_id, run.run_id, now, reason, actor=who)

    def finish_runs(self, now: datetime, run_pks: list[int] | None = None) -> list[tuple[str, str]]:
        """Finish running runs whose task instances are all finished: (run_id, state)
        pairs (see :meth:`finish_ready_runs`)."""
        return self.finish_ready_runs(now, run_pks).finished

    def finish_ready_runs(self, now: datetime, run_pks: list[int] | None = None) -> Advanced:
        """Finish running runs whose task instances are all finished; start what they
        made room for.

        A run fails if any of its leaf tasks failed or was upstream_failed, else it
        succeeds. In the same transaction, the queued
        runs of the finished runs' DAGs start within their overlap policy (and their
        root tasks are queued) where that needs no cancellation and the DAG's row is
        free; ``start_runs`` does the rest.
        """
        with self.read() as conn:
            candidates = runs_to_finish(conn, run_pks)
        if not candidates:
            return Advanced([], Started([]), False)
        # one transaction for all of them: runs locked in id order, each decided again
        # from the states read under its lock
        with self.write() as conn:
            lock_runs(conn, candidates, self.is_postgres)
            return self.advance_runs_locked(conn, candidates, now)

    def advance_runs_locked(
        self, conn: Connection, run_pks: Iterable[int], now: datetime
    ) -> Advanced:
        """Finish the given runs if complete, and start the queued runs they make room for.

        For a write transaction that holds the rows of ``run_pks`` (``lock_runs``):
        the scheduler's ``finish_runs``, and a worker's transaction that has just
        recorded a leaf task's success (``finish.py``), so a catch-up's next run starts
        and its root tasks are queued without a scheduler round trip. Decisions are the
        scheduler's own: a run finishes when all its task instances are finished (the
        trigger rules have nothing left to decide then), and runs start within
        ``max_active_runs``/``overlap`` under the DAG's row lock. ``needs_scheduler``
        says something is left that only the scheduler does: a finished backfill run
        (``finish_backfills``), or starting runs where the DAG row was busy or the
        policy cancels a run.
        """
        done = finish_runs_locked(conn, run_pks, self.spec, now)  # type: ignore[attr-defined]
        needs = any(x.backfill_id is not None for x, _ in done)
        run_ids: list[str] = []
        queued = 0
        for dag_id in sorted({x.dag_id for x, _ in done}):
            started = start_runs_locked(
                conn,
                dag_id,
                self.spec,  # type: ignore[attr-defined]
                now,
                is_postgres=self.is_postgres,
                holding_runs=True,
            )
            if started is None:
                needs = True
            else:
                run_ids += started.run_ids
                queued += started.tasks_queued
        return Advanced([(x.run_id, state) for x, state in done], Started(run_ids, queued), needs)

    # -- reads ---------------------------------------------------------------------------
    def get_run(self, run_id: str) -> RunRecord:
        with self.read() as conn:
            row = conn.execute(select(m.dag_runs).where(m.dag_runs.c.run_id == run_id)).first()
        if row is None:
            raise NotFoundError(f"no run with run_id {run_id!r}")
        return RunRecord.from_row(row)

    def list_runs(
        self,
        dag_id: str | None = None,
        state: str | None = None,
        limit: int = 50,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        exclude_types: tuple[str, ...] = (),
    ) -> list[RunRecord]:
        """Runs, newest logical date first; ``since``/``until`` bound the logical date
        (both inclusive), ``exclude_types`` leaves out run types (``("backfill",)``)."""
        r = m.dag_runs
        q = select(r).order_by(r.c.logical_date.desc(), r.c.id.desc()).limit(limit)
        if dag_id is not None:
            q = q.where(r.c.dag_id == dag_id)
        if state is not None:
            q = q.where(r.c.state == state)
        if since is not None:
            q = q.where(r.c.logical_date >= since)
        if until is not None:
            q = q.where(r.c.logical_date <= until)
        if exclude_types:
            q = q.where(r.c.run_type.not_in(list(exclude_types)))
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
