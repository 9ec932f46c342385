"""What the DAG list and a DAG's page read: each DAG's recent runs, its current spec,
its grid (runs x tasks), the states its graph colours and its run history.

Every query is bounded (LIMIT/OFFSET or a fixed set of keys) and follows an index, so
the pages stay fast with a million task instances stored. A mapped task's instances
come out counted by state; the web UI sums them up in one state (``webui/mapped.py``).

>>> marks = store.recent_runs(per_dag=10)       # doctest: +SKIP
>>> [m.state for m in marks["nightly_report"]]  # doctest: +SKIP
['success', 'failed', 'running']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import bindparam, func, literal, select, union_all

from orchestrator.authoring.spec import DagSpec
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import DagRecord, Record, RunRecord

# a mapped task's instances in a grid cell: (run_id, task_id) -> state -> (count, max try)
MappedCells = dict[tuple[str, str], dict[str, tuple[int, int]]]


@dataclass(frozen=True)
class RunMark(Record):
    """One run as a coloured mark in the DAG list."""

    run_id: str
    run_type: str
    logical_date: datetime
    state: str
    start_date: datetime | None = None  # the DAG list's "last run" (issue 27)
    end_date: datetime | None = None


class Cell(NamedTuple):
    """One task instance in the grid (a tuple: a wide DAG's grid has tens of thousands)."""

    state: str
    try_number: int
    instances: int = 0  # a mapped task's number of instances (0: not mapped)
    counts: str = ""  # issue 27: a mapped task's instances by state ("3 running, 7 success")


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


# the DAG list's filters and sort keys (issue 27): the web UI checks its parameters
# against these before calling dag_list_page
LIST_STATES = ("failed", "running", "paused", "active")
LIST_SORTS = ("dag_id", "last_run", "next_run", "owner")


def _last_run_pk():  # noqa: ANN202 (a correlated scalar subquery)
    r, d = m.dag_runs, m.dags
    return (
        select(r.c.id)
        .where(r.c.dag_id == d.c.dag_id)
        .order_by(r.c.logical_date.desc(), r.c.id.desc())
        .limit(1)
        .correlate(d)
        .scalar_subquery()
    )


class DagPagesStore(StoreBase):
    def dag_list_page(
        self,
        *,
        state: str = "",
        tag: str = "",
        owner: str = "",
        search: str = "",
        sort: str = "dag_id",
        descending: bool = False,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[DagRecord], int]:
        """One page of the active DAGs and how many match in all.

        ``state``: ``failed`` (the latest run failed), ``running`` (a run is running),
        ``paused`` or ``active`` (not paused); ``owner``: one of its tasks' owners.
        ``sort``: ``dag_id``, ``last_run`` (the latest run's logical date; DAGs without
        runs last), ``next_run`` (none last) or ``owner`` (the first owner; none last),
        ties broken by dag_id. The latest run is one index probe per DAG on (dag_id,
        logical_date), so 10,000 DAGs cost 10,000 probes at most, never a scan of runs.
        """
        if state and state not in LIST_STATES:
            raise ValueError(f"unknown DAG list state {state!r}")
        if sort not in LIST_SORTS:
            raise ValueError(f"unknown DAG list sort {sort!r}")
        d, r = m.dags, m.dag_runs
        cond = [d.c.is_active.is_(True)]
        if tag:
            cond.append(d.c.tags.contains(json.dumps(tag), autoescape=True))
        if owner:
            cond.append(d.c.owners.contains(json.dumps(owner), autoescape=True))
        if search:
            cond.append(func.lower(d.c.dag_id).contains(search.lower(), autoescape=True))
        if state == "paused":
            cond.append(d.c.is_paused.is_(True))
        elif state == "active":
            cond.append(d.c.is_paused.is_(False))
        elif state == "running":
            running = select(literal(1)).where(r.c.dag_id == d.c.dag_id, r.c.state == "running")
            cond.append(running.correlate(d).exists())
        elif state == "failed":
            latest = select(r.c.state).where(r.c.id == _last_run_pk()).scalar_subquery()
            cond.append(latest == "failed")
        if sort == "last_run":
            key = (
                select(r.c.logical_date)
                .where(r.c.dag_id == d.c.dag_id)
                .order_by(r.c.logical_date.desc())
                .limit(1)
                .correlate(d)
                .scalar_subquery()
            )
        elif sort == "next_run":
            key = d.c.next_logical_date
        elif sort == "owner":  # '["ann", "bob"]' sorts as its first owner; '[]' is none
            key = func.nullif(d.c.owners, "[]")
        else:
            key = d.c.dag_id
        order = [key.is_(None), key.desc() if descending else key.asc()]  # none last, always
        if sort != "dag_id":
            order.append(d.c.dag_id.desc() if descending else d.c.dag_id.asc())
        # the total apart: COUNT(*) OVER () would make the database build every
        # matching row before the LIMIT (2x slower for the first page of 10,000 DAGs)
        q = select(d).where(*cond).order_by(*order).offset(offset).limit(limit)
        with self.read() as conn:
            rows = [DagRecord.from_row(row) for row in conn.execute(q)]
            total = conn.execute(select(func.count()).select_from(d).where(*cond)).scalar_one()
        return rows, total

    def dag_labels(self) -> tuple[list[str], list[str]]:
        """Every tag and every owner of the active DAGs, each sorted (one query)."""
        d = m.dags
        tags: set[str] = set()
        owners: set[str] = set()
        with self.read() as conn:
            q = select(d.c.tags, d.c.owners).where(d.c.is_active.is_(True)).distinct()
            for raw_tags, raw_owners in conn.execute(q):
                tags.update(json.loads(raw_tags or "[]"))
                owners.update(json.loads(raw_owners or "[]"))
        return sorted(tags), sorted(owners)

    def recent_runs(
        self, *, per_dag: int = 10, dag_ids: list[str] | None = None
    ) -> dict[str, list[RunMark]]:
        """The last ``per_dag`` runs of every DAG (or of ``dag_ids``), oldest first.

        One statement: a UNION ALL of one small ``ORDER BY logical_date DESC LIMIT n``
        per DAG, each an index range scan on (dag_id, logical_date), so the cost grows
        with the number of DAGs shown, not with the number of runs stored.
        """
        r = m.dag_runs
        if dag_ids is None:
            with self.read() as conn:
                dag_ids = list(conn.execute(select(m.dags.c.dag_id)).scalars())
        if not dag_ids:
            return {}
        out: dict[str, list[RunMark]] = {}
        cols = (
            r.c.dag_id, r.c.run_id, r.c.run_type, r.c.logical_date, r.c.state, r.c.id,
            r.c.start_date, r.c.end_date,
        )  # fmt: skip
        with self.read() as conn:
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
                        RunMark(
                            row.run_id,
                            row.run_type,
                            row.logical_date,
                            row.state,
                            row.start_date,
                            row.end_date,
                        )  # fmt: skip
                    )
        for marks in out.values():
            marks.sort(key=lambda mk: mk.logical_date)
        return out

    def current_specs(self, dag_ids: list[str]) -> dict[str, DagSpec]:
        """The current DagSpec of each DAG in one query (specs already parsed are reused)."""
        d, v = m.dags, m.dag_versions
        out: dict[str, DagSpec] = {}
        with self.read() as conn:
            hashes = dict(
                conn.execute(
                    select(d.c.dag_id, d.c.version_hash).where(d.c.dag_id.in_(dag_ids))
                ).all()
            )
            missing = [k for k, h in hashes.items() if f"{k}/{h}" not in self._specs]
            if missing:
                rows = conn.execute(
                    select(v.c.dag_id, v.c.hash, v.c.data)
                    .join(d, (d.c.dag_id == v.c.dag_id) & (d.c.version_hash == v.c.hash))
                    .where(v.c.dag_id.in_(missing))
                ).all()
                for row in rows:
                    self._specs[f"{row.dag_id}/{row.hash}"] = DagSpec.from_json(row.data)
        for dag_id, digest in hashes.items():
            out[dag_id] = self._specs[f"{dag_id}/{digest}"]  # type: ignore[assignment]
        return out

    def runs_page(
        self,
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
        with self.read() as conn:
            runs = [RunRecord.from_row(row) for row in conn.execute(q)]
            total = conn.execute(select(func.count()).select_from(counted.subquery())).scalar_one()
        return runs, total

    def dag_grid(
        self, dag_id: str, *, limit: int, state: str | None = None, run_type: str | None = None
    ) -> tuple[list[RunRecord], dict[tuple[str, str], Cell], MappedCells]:
        """The latest ``limit`` runs (oldest first; only those in ``state`` and of
        ``run_type`` when given), the cells of their unmapped task instances by (run_id,
        task_id), and their mapped tasks' instances counted by state in the database
        (``webui.mapped.add_mapped_cells`` makes those cells)."""
        r, ti = m.dag_runs, m.task_instances
        cells: dict[tuple[str, str], Cell] = {}
        mapped: MappedCells = {}
        which = [r.c.dag_id == dag_id]
        if state:
            which.append(r.c.state == state)
        if run_type:
            which.append(r.c.run_type == run_type)
        with self.read() as conn:
            rows = conn.execute(
                select(r)
                .where(*which)
                .order_by(r.c.logical_date.desc(), r.c.id.desc())
                .limit(limit)
            ).all()
            runs = [RunRecord.from_row(row) for row in reversed(rows)]
            if runs:
                by_pk = {run.id: run.run_id for run in runs}
                pks = list(by_pk)
                q = select(ti.c.run_pk, ti.c.task_id, ti.c.state, ti.c.try_number).where(
                    ti.c.run_pk.in_(pks), ti.c.map_index < 0
                )
                for row in conn.execute(q):
                    cells[(by_pk[row.run_pk], row.task_id)] = Cell(row.state, row.try_number)
                for run_pk, task_id, state, n, tries in conn.execute(_MAPPED_CELLS, {"pks": pks}):
                    mapped.setdefault((by_pk[run_pk], task_id), {})[state] = (n, tries)
        return runs, cells, mapped

    def run_task_states(self, run_id: str) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
        """task_id -> state of a run's unmapped tasks, and its mapped tasks' instances
        counted by state: all the graph of a DAG's page needs of the run."""
        ti = m.task_instances
        mapped: dict[str, dict[str, int]] = {}
        with self.read() as conn:
            plain = dict(
                conn.execute(
                    select(ti.c.task_id, ti.c.state).where(
                        ti.c.run_id == run_id, ti.c.map_index < 0
                    )
                ).all()
            )
            for task_id, state, n in conn.execute(
                select(ti.c.task_id, ti.c.state, func.count())
                .where(ti.c.run_id == run_id, ti.c.map_index >= 0)
                .group_by(ti.c.task_id, ti.c.state)
            ):
                mapped.setdefault(task_id, {})[state] = n
        return plain, mapped

    def dag_summary(self, dag_id: str, *, limit: int) -> dict:
        """What changes on a DAG's page, cheaply: pause state and its latest ``limit``
        runs, each with its task instances counted by state (index on run_pk, state);
        ``{}`` for an unknown DAG."""
        d, r, ti = m.dags, m.dag_runs, m.task_instances
        with self.read() as conn:
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
