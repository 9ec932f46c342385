"""What a run's page and its JSON API read: its task instances as lines, its tries as
the Gantt chart draws them, what an open page polls, and one task's result.

A wide run has 10,000 task instances, so the page reads tuples of the columns it shows
(:class:`TaskLine`, :class:`TryLine`) rather than records, and a mapped task's
instances and tries grouped by state in the database (``webui/mapped.py`` merges
them into one line).

>>> plain, mapped = store.run_lines("etl__manual__2026-01-01T00:00:00+00:00")  # doctest: +SKIP
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select, type_coerce

from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import TaskInstanceRecord, TryRecord


class TaskLine(NamedTuple):
    """What a run page shows of a task instance (a tuple: a wide run has 10,000)."""

    task_id: str
    state: str
    try_number: int
    max_tries: int
    owner: str | None
    start_date: datetime | None
    end_date: datetime | None
    map_index: int = -1
    ready_at: datetime | None = None  # when a retry or the next poke is due (the Gantt)


class TryLine(NamedTuple):
    """What a run page's Gantt chart draws of a try."""

    task_id: str
    try_number: int
    state: str
    start_date: datetime
    end_date: datetime | None
    map_index: int = -1
    lost_reason: str | None = None  # a lost try is queued again at once: no back-off


class MappedLine(NamedTuple):
    """A mapped task's instances of one state, summed up by the database."""

    task_id: str
    state: str
    count: int
    try_number: int
    max_tries: int
    start_date: datetime | None
    end_date: datetime | None
    open: int  # how many have no end date


class MappedTries(NamedTuple):
    """A mapped task's tries of one state: the first start and the last end."""

    task_id: str
    state: str
    start_date: datetime
    end_date: datetime | None
    open: int


class RunPagesStore(StoreBase):
    def task_instances_without_results(self, run_id: str) -> list[TaskInstanceRecord]:
        """A run's task instances without their results (a page shows none of them, and
        10,000 results can weigh more than the rest of the page); ``task_instances``
        reads them whole."""
        ti = m.task_instances
        cols = [c for c in ti.c if c.name not in ("result", "run_pk", "pool", "pool_slots")]
        with self.read() as conn:
            rows = conn.execute(select(*cols).where(ti.c.run_id == run_id).order_by(ti.c.id)).all()
        return [TaskInstanceRecord.from_row(row) for row in rows]

    def run_lines(self, run_id: str) -> tuple[list[TaskLine], list[MappedLine]]:
        """The run page's task lines: each unmapped instance, and each mapped task's
        instances grouped by state (10,000 instances cost a GROUP BY, not 10,000 rows)."""
        ti = m.task_instances
        cols = [ti.c[name] for name in TaskLine._fields]
        with self.read() as conn:
            plain = conn.execute(
                select(*cols).where(ti.c.run_id == run_id, ti.c.map_index < 0).order_by(ti.c.id)
            ).all()
            grouped = conn.execute(
                select(
                    ti.c.task_id, ti.c.state, func.count(), func.max(ti.c.try_number),
                    func.max(ti.c.max_tries),
                    type_coerce(func.min(ti.c.start_date), m.UTCDateTime()),
                    type_coerce(func.max(ti.c.end_date), m.UTCDateTime()),
                    func.count() - func.count(ti.c.end_date),
                )
                .where(ti.c.run_id == run_id, ti.c.map_index >= 0)
                .group_by(ti.c.task_id, ti.c.state)
            ).all()  # fmt: skip
        return [TaskLine._make(row) for row in plain], [MappedLine._make(row) for row in grouped]

    def run_try_lines(self, run_id: str) -> tuple[list[TryLine], list[MappedTries]]:
        """The Gantt chart's tries: each of an unmapped task, and each mapped task's tries
        summed up by state (first start, last end)."""
        ti, tries = m.task_instances, m.task_tries
        ids = select(ti.c.id).where(ti.c.run_id == run_id).scalar_subquery()
        cols = [tries.c[name] for name in TryLine._fields]
        with self.read() as conn:
            plain = conn.execute(
                select(*cols)
                .where(tries.c.ti_id.in_(ids), tries.c.map_index < 0)
                .order_by(tries.c.id)
            ).all()
            grouped = conn.execute(
                select(
                    tries.c.task_id, tries.c.state,
                    type_coerce(func.min(tries.c.start_date), m.UTCDateTime()),
                    type_coerce(func.max(tries.c.end_date), m.UTCDateTime()),
                    func.count() - func.count(tries.c.end_date),
                )
                .where(tries.c.ti_id.in_(ids), tries.c.map_index >= 0)
                .group_by(tries.c.task_id, tries.c.state)
            ).all()  # fmt: skip
        return [TryLine._make(row) for row in plain], [MappedTries._make(row) for row in grouped]

    def instance_lines(
        self, run_id: str, task_ids: list[str], limit: int
    ) -> tuple[list[TaskLine], list[TryLine]]:
        """The first ``limit`` instances (map index 0..limit-1) of each mapped task in
        ``task_ids`` and their tries: the Gantt chart's rows per instance, read through
        the unique key (run_pk, task_id, map_index), whatever the task's width."""
        if not task_ids:
            return [], []
        ti, tries = m.task_instances, m.task_tries
        which = (
            ti.c.run_id == run_id,
            ti.c.task_id.in_(sorted(task_ids)),
            ti.c.map_index >= 0,
            ti.c.map_index < limit,
        )
        with self.read() as conn:
            lines = conn.execute(
                select(*[ti.c[name] for name in TaskLine._fields])
                .where(*which)
                .order_by(ti.c.task_id, ti.c.map_index)
            ).all()
            ids = select(ti.c.id).where(*which).scalar_subquery()
            found = conn.execute(
                select(*[tries.c[name] for name in TryLine._fields])
                .where(tries.c.ti_id.in_(ids))
                .order_by(tries.c.id)
            ).all()
        return [TaskLine._make(r) for r in lines], [TryLine._make(r) for r in found]

    def run_tries(self, run_id: str) -> list[TryRecord]:
        """Every try of every task of a run (through the task instances' index)."""
        ti, tries = m.task_instances, m.task_tries
        ids = select(ti.c.id).where(ti.c.run_id == run_id).scalar_subquery()
        with self.read() as conn:
            rows = conn.execute(
                select(tries).where(tries.c.ti_id.in_(ids)).order_by(tries.c.id)
            ).all()
        return [TryRecord.from_row(row) for row in rows]

    def run_summary(self, run_id: str) -> dict:
        """What changes while a run runs, in two indexed queries whatever its size: its
        state, its task instances counted by state, its tries counted and the last one
        begun or ended (``{}`` for an unknown run). An open run page polls this to know
        when to refresh."""
        r, ti, tries = m.dag_runs, m.task_instances, m.task_tries
        with self.read() as conn:
            run = conn.execute(
                select(r.c.id, r.c.state, r.c.end_date).where(r.c.run_id == run_id)
            ).first()
            if run is None:
                return {}
            counts = dict(
                conn.execute(
                    select(ti.c.state, func.count())
                    .where(ti.c.run_pk == run.id)
                    .group_by(ti.c.state)
                ).all()
            )
            ids = select(ti.c.id).where(ti.c.run_pk == run.id).scalar_subquery()
            n, last, ended = conn.execute(
                select(func.count(), func.max(tries.c.id), func.max(tries.c.end_date)).where(
                    tries.c.ti_id.in_(ids)
                )
            ).one()
        return {"run_id": run_id, "state": run.state, "end_date": run.end_date,
                "task_states": dict(sorted(counts.items())), "tries": n, "last_try": last,
                "last_try_end": ended}  # fmt: skip

    def result_of(self, run_id: str, task_id: str, map_index: int = -1) -> str | None:
        """One task instance's JSON result (None: none, or no such instance)."""
        ti = m.task_instances
        with self.read() as conn:
            return conn.execute(
                select(ti.c.result).where(
                    ti.c.run_id == run_id, ti.c.task_id == task_id, ti.c.map_index == map_index
                )
            ).scalar_one_or_none()
