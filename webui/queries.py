"""Read queries the web UI needs that the store does not offer (yet).

Plain SQLAlchemy Core over :mod:`orchestrator.store.core.models`, inside the store's
read transactions; records, not rows, come out. Nothing here writes. Every query
is bounded (LIMIT/OFFSET or a fixed set of keys) and uses an index, so pages stay
fast with a million task instances in the store.

>>> marks = recent_runs(store, per_dag=10)    # doctest: +SKIP
>>> [m.state for m in marks["nightly_report"]]  # doctest: +SKIP
['success', 'failed', 'running']
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import bindparam, func, select, type_coerce, union_all

from orchestrator.authoring.spec import DagSpec
from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.core.records import Record, RunRecord, TaskInstanceRecord, TryRecord

from .mapped import summary_state


@dataclass(frozen=True)
class RunMark(Record):
    """One run as a coloured mark in the DAG list."""

    run_id: str
    run_type: str
    logical_date: datetime
    state: str


class Cell(NamedTuple):
    """One task instance in the grid (a tuple: a wide DAG's grid has tens of thousands)."""

    state: str
    try_number: int
    instances: int = 0  # a mapped task's number of instances (0: not mapped)


def recent_runs(
    store: Store, *, per_dag: int = 10, dag_ids: list[str] | None = None
) -> dict[str, list[RunMark]]:
    """The last ``per_dag`` runs of every DAG (or of ``dag_ids``), oldest first.

    One statement: a UNION ALL of one small ``ORDER BY logical_date DESC LIMIT n``
    per DAG, each an index range scan on (dag_id, logical_date), so the cost grows
    with the number of DAGs shown, not with the number of runs stored.
    """
    r = m.dag_runs
    if dag_ids is None:
        with store.read() as conn:
            dag_ids = list(conn.execute(select(m.dags.c.dag_id)).scalars())
    if not dag_ids:
        return {}
    out: dict[str, list[RunMark]] = {}
    cols = (r.c.dag_id, r.c.run_id, r.c.run_type, r.c.logical_date, r.c.state, r.c.id)
    with store.read() as conn:
        for i in range(0, len(dag_ids), 200):
            parts = [
                select(*cols)
                .where(r.c.dag_id == dag_id)
                .order_by(r.c.logical_date.desc(), r.c.id.desc())
                .limit(per_dag)
                .subquery()
                for dag_id in dag_ids[i : i + 200]
            ]
            q = union_all(*(select(p) for p in parts))
            for row in conn.execute(q):
                out.setdefault(row.dag_id, []).append(
                    RunMark(row.run_id, row.run_type, row.logical_date, row.state)
                )
    for marks in out.values():
        marks.sort(key=lambda mk: mk.logical_date)
    return out


def current_specs(store: Store, dag_ids: list[str]) -> dict[str, DagSpec]:
    """The current DagSpec of each DAG in one query (specs already parsed are reused)."""
    d, v = m.dags, m.dag_versions
    out: dict[str, DagSpec] = {}
    with store.read() as conn:
        hashes = dict(
            conn.execute(select(d.c.dag_id, d.c.version_hash).where(d.c.dag_id.in_(dag_ids))).all()
        )
        missing = [k for k, h in hashes.items() if f"{k}/{h}" not in store._specs]
        if missing:
            rows = conn.execute(
                select(v.c.dag_id, v.c.hash, v.c.data)
                .join(d, (d.c.dag_id == v.c.dag_id) & (d.c.version_hash == v.c.hash))
                .where(v.c.dag_id.in_(missing))
            ).all()
            for row in rows:
                store._specs[f"{row.dag_id}/{row.hash}"] = DagSpec.from_json(row.data)
    for dag_id, digest in hashes.items():
        out[dag_id] = store._specs[f"{dag_id}/{digest}"]  # type: ignore[assignment]
    return out


def runs_page(
    store: Store,
    dag_id: str,
    *,
    state: str | None,
    offset: int,
    limit: int,
    count_up_to: int | None = None,
) -> tuple[list[RunRecord], int]:
    """One page of a DAG's runs, newest first, and how many there are in all.

    Counting every run walks the DAG's whole history; with ``count_up_to`` the count
    stops there and a total of ``count_up_to + 1`` means "more than that", so a page
    costs the same with a thousand runs or a million.
    """
    r = m.dag_runs
    cond = [r.c.dag_id == dag_id]
    if state:
        cond.append(r.c.state == state)
    q = (
        select(r)
        .where(*cond)
        .order_by(r.c.logical_date.desc(), r.c.id.desc())
        .offset(offset)
        .limit(limit)
    )
    counted = select(r.c.id).where(*cond)
    if count_up_to is not None:
        counted = counted.limit(count_up_to + 1)
    with store.read() as conn:
        runs = [RunRecord.from_row(row) for row in conn.execute(q)]
        total = conn.execute(select(func.count()).select_from(counted.subquery())).scalar_one()
    return runs, total


def grid(store: Store, dag_id: str, *, limit: int) -> tuple[list[RunRecord], dict]:
    """The latest ``limit`` runs (oldest first) and their cells by (run_id, task_id)."""
    r, ti = m.dag_runs, m.task_instances
    with store.read() as conn:
        rows = conn.execute(
            select(r)
            .where(r.c.dag_id == dag_id)
            .order_by(r.c.logical_date.desc(), r.c.id.desc())
            .limit(limit)
        ).all()
        runs = [RunRecord.from_row(row) for row in reversed(rows)]
        cells: dict[tuple[str, str], Cell] = {}
        if runs:
            by_pk = {run.id: run.run_id for run in runs}
            pks = list(by_pk)
            q = select(ti.c.run_pk, ti.c.task_id, ti.c.state, ti.c.try_number).where(
                ti.c.run_pk.in_(pks), ti.c.map_index < 0
            )
            for row in conn.execute(q):
                cells[(by_pk[row.run_pk], row.task_id)] = Cell(row.state, row.try_number)
            # a mapped task: one cell, its instances counted by state in the database
            mapped: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
            for run_pk, task_id, state, n, tries in conn.execute(_MAPPED_CELLS, {"pks": pks}):
                mapped.setdefault((by_pk[run_pk], task_id), {})[state] = (n, tries)
            for key, by_state in mapped.items():
                counts = {s: n for s, (n, _) in by_state.items()}
                tries = max(t for _, t in by_state.values())
                cells[key] = Cell(summary_state(counts), tries, sum(counts.values()))
    return runs, cells


_MAPPED_CELLS = (
    select(
        m.task_instances.c.run_pk,
        m.task_instances.c.task_id,
        m.task_instances.c.state,
        func.count(),
        func.max(m.task_instances.c.try_number),
    )
    .where(
        m.task_instances.c.run_pk.in_(bindparam("pks", expanding=True)),
        m.task_instances.c.map_index >= 0,
    )
    .group_by(m.task_instances.c.run_pk, m.task_instances.c.task_id, m.task_instances.c.state)
)


def task_instances(store: Store, run_id: str) -> list[TaskInstanceRecord]:
    """A run's task instances without their results (a page shows none of them, and
    10,000 results can weigh more than the rest of the page)."""
    ti = m.task_instances
    cols = [c for c in ti.c if c.name not in ("result", "run_pk", "pool", "pool_slots")]
    with store.read() as conn:
        rows = conn.execute(select(*cols).where(ti.c.run_id == run_id).order_by(ti.c.id)).all()
    return [TaskInstanceRecord.from_row(row) for row in rows]


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


class TryLine(NamedTuple):
    """What a run page's Gantt chart draws of a try."""

    task_id: str
    try_number: int
    state: str
    start_date: datetime
    end_date: datetime | None
    map_index: int = -1


def task_lines(store: Store, run_id: str) -> list[TaskLine]:
    """A run's task instances as the run page shows them: seven columns, no records
    (a full :class:`TaskInstanceRecord` each cost a 10,000-task page a third of its time)."""
    ti = m.task_instances
    cols = [ti.c[name] for name in TaskLine._fields]
    with store.read() as conn:
        rows = conn.execute(select(*cols).where(ti.c.run_id == run_id).order_by(ti.c.id)).all()
    return [TaskLine._make(row) for row in rows]


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


def run_lines(store: Store, run_id: str) -> tuple[list[TaskLine], list[MappedLine]]:
    """The run page's task lines: each unmapped instance, and each mapped task's
    instances grouped by state (10,000 instances cost a GROUP BY, not 10,000 rows)."""
    ti = m.task_instances
    cols = [ti.c[name] for name in TaskLine._fields]
    with store.read() as conn:
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


class MappedTries(NamedTuple):
    task_id: str
    state: str
    start_date: datetime
    end_date: datetime | None
    open: int


def run_try_lines(store: Store, run_id: str) -> tuple[list[TryLine], list[MappedTries]]:
    """The Gantt chart's tries: each of an unmapped task, and each mapped task's tries
    summed up by state (first start, last end)."""
    ti, tries = m.task_instances, m.task_tries
    ids = select(ti.c.id).where(ti.c.run_id == run_id).scalar_subquery()
    cols = [tries.c[name] for name in TryLine._fields]
    with store.read() as conn:
        plain = conn.execute(
            select(*cols).where(tries.c.ti_id.in_(ids), tries.c.map_index < 0).order_by(tries.c.id)
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


def try_lines(store: Store, run_id: str) -> list[TryLine]:
    """Every try of a run as its Gantt chart draws it (the query of :func:`run_tries`)."""
    ti, tries = m.task_instances, m.task_tries
    ids = select(ti.c.id).where(ti.c.run_id == run_id).scalar_subquery()
    cols = [tries.c[name] for name in TryLine._fields]
    with store.read() as conn:
        rows = conn.execute(select(*cols).where(tries.c.ti_id.in_(ids)).order_by(tries.c.id)).all()
    return [TryLine._make(row) for row in rows]


def task_states(store: Store, run_id: str) -> dict[str, str]:
    """task_id -> state for one run: all the graph of a DAG's page needs of it."""
    ti = m.task_instances
    mapped: dict[str, dict[str, int]] = {}
    with store.read() as conn:
        out = dict(
            conn.execute(
                select(ti.c.task_id, ti.c.state).where(ti.c.run_id == run_id, ti.c.map_index < 0)
            ).all()
        )
        # a mapped task: its instances counted by state, summed up in one state
        for task_id, state, n in conn.execute(
            select(ti.c.task_id, ti.c.state, func.count())
            .where(ti.c.run_id == run_id, ti.c.map_index >= 0)
            .group_by(ti.c.task_id, ti.c.state)
        ):
            mapped.setdefault(task_id, {})[state] = n
    out.update({t: summary_state(c) for t, c in mapped.items()})
    return out


def run_tries(store: Store, run_id: str) -> list[TryRecord]:
    """Every try of every task of a run (through the task instances' index)."""
    ti, tries = m.task_instances, m.task_tries
    ids = select(ti.c.id).where(ti.c.run_id == run_id).scalar_subquery()
    with store.read() as conn:
        rows = conn.execute(select(tries).where(tries.c.ti_id.in_(ids)).order_by(tries.c.id)).all()
    return [TryRecord.from_row(row) for row in rows]


def run_summary(store: Store, run_id: str) -> dict:
    """What changes while a run runs, in two indexed queries whatever its size: its
    state, its task instances counted by state, its tries counted and the last one
    begun or ended. An open run page polls this to know when to refresh."""
    r, ti, tries = m.dag_runs, m.task_instances, m.task_tries
    with store.read() as conn:
        run = conn.execute(
            select(r.c.id, r.c.state, r.c.end_date).where(r.c.run_id == run_id)
        ).first()
        if run is None:
            return {}
        counts = dict(
            conn.execute(
                select(ti.c.state, func.count()).where(ti.c.run_pk == run.id).group_by(ti.c.state)
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


def dag_summary(store: Store, dag_id: str, *, limit: int) -> dict:
    """What changes on a DAG's page, cheaply: pause state and its latest ``limit``
    runs, each with its task instances counted by state (index on run_pk, state)."""
    d, r, ti = m.dags, m.dag_runs, m.task_instances
    with store.read() as conn:
        paused = conn.execute(
            select(d.c.is_paused).where(d.c.dag_id == dag_id)
        ).scalar_one_or_none()
        if paused is None:
            return {}
        runs = conn.execute(
            select(r.c.id, r.c.run_id, r.c.state)
            .where(r.c.dag_id == dag_id)
            .order_by(r.c.logical_date.desc(), r.c.id.desc())
            .limit(limit)
        ).all()
        counts: dict[int, dict[str, int]] = {run.id: {} for run in runs}
        if runs:
            q = (
                select(ti.c.run_pk, ti.c.state, func.count())
                .where(ti.c.run_pk.in_(list(counts)))
                .group_by(ti.c.run_pk, ti.c.state)
            )
            for pk, state, n in conn.execute(q):
                counts[pk][state] = n
    return {"dag_id": dag_id, "is_paused": bool(paused),
            "dag_runs": [{"run_id": x.run_id, "state": x.state,
                          "task_states": dict(sorted(counts[x.id].items()))}
                         for x in reversed(runs)]}  # fmt: skip


def result_of(store: Store, run_id: str, task_id: str, map_index: int = -1) -> str | None:
    ti = m.task_instances
    with store.read() as conn:
        return conn.execute(
            select(ti.c.result).where(
                ti.c.run_id == run_id, ti.c.task_id == task_id, ti.c.map_index == map_index
            )
        ).scalar_one_or_none()


def ping(store: Store) -> None:
    """Raise if the database does not answer a trivial query."""
    with store.read() as conn:
        conn.execute(select(1)).scalar_one()


@dataclass(frozen=True)
class HealthFacts(Record):
    """What ``/health`` judges the cluster by, read in one transaction."""

    leader: str | None
    lease_expires_at: datetime | None
    heartbeats: tuple[datetime, ...]  # the last heartbeat of each worker not stopped

    def workers_alive(self, since: datetime) -> int:
        return sum(1 for at in self.heartbeats if at >= since)

    @property
    def last_worker_heartbeat(self) -> datetime | None:
        return max(self.heartbeats, default=None)


def health_facts(store: Store) -> HealthFacts:
    """The leader lease, and the last heartbeat of every worker that has not stopped."""
    from orchestrator.store.cluster.leader import LEASE_NAME

    w = m.workers
    with store.read() as conn:
        lease = conn.execute(
            select(m.scheduler_lease.c.holder, m.scheduler_lease.c.expires_at).where(
                m.scheduler_lease.c.name == LEASE_NAME
            )
        ).first()
        beats = conn.execute(select(w.c.heartbeat_at).where(w.c.stopped_at.is_(None))).scalars()
        heartbeats = tuple(sorted(at for at in beats if at is not None))
    return HealthFacts(
        leader=lease.holder if lease is not None else None,
        lease_expires_at=lease.expires_at if lease is not None else None,
        heartbeats=heartbeats,
    )


# -- mapped tasks summed up (issue 14) ---------------------------------------------------
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
