"""What the pages read of mapped tasks (issue 14): a run's mapped tasks' instances
counted by state, and one page of a task's instances in map order.

A mapped task may have 10,000 instances; a page reads them one page at a time through
the unique key (run_pk, task_id, map_index), and counts the rest in the database.

>>> store.mapped_counts(run_id)  # doctest: +SKIP
{'square': {'success': 9998, 'running': 2}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from orchestrator.errors import NotFoundError
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import RunRecord


@dataclass(frozen=True)
class InstanceLine:
    """One instance of a mapped task in its instance list."""

    map_index: int
    state: str
    try_number: int
    max_tries: int
    start_date: Any
    end_date: Any
    owner: str | None
    map_kwargs: str | None
    rendered_map_index: str | None = None  # issue 25 item 7: its map_index_template name


class MappedPagesStore(StoreBase):
    def mapped_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """The run's mapped tasks' instances by state (one grouped, indexed query)."""
        ti = m.task_instances
        out: dict[str, dict[str, int]] = {}
        with self.read() as conn:
            rows = conn.execute(
                select(ti.c.task_id, ti.c.state, func.count())
                .where(ti.c.run_id == run_id, ti.c.map_index >= 0)
                .group_by(ti.c.task_id, ti.c.state)
            ).all()
        for task_id, state, n in rows:
            out.setdefault(task_id, {})[state] = n
        return out

    def mapped_instances(
        self, run_id: str, task_id: str, *, state: str = "", offset: int, limit: int
    ) -> tuple[RunRecord, dict[str, int], list[InstanceLine]]:
        """The run, all the task's instances counted by state, and ``limit`` of them (of
        ``state`` only, unless '') from ``offset`` in map order; :class:`NotFoundError`
        for an unknown run or a task the run does not have."""
        ti = m.task_instances
        run = self.get_run(run_id)  # type: ignore[attr-defined]
        cond = [ti.c.run_pk == run.id, ti.c.task_id == task_id]
        with self.read() as conn:
            counts = dict(
                conn.execute(
                    select(ti.c.state, func.count()).where(*cond).group_by(ti.c.state)
                ).all()
            )
            if not counts:
                raise NotFoundError(f"run {run_id!r} has no task {task_id!r}")
            if state:
                cond.append(ti.c.state == state)
            rows = conn.execute(
                select(
                    ti.c.map_index, ti.c.state, ti.c.try_number, ti.c.max_tries,
                    ti.c.start_date, ti.c.end_date, ti.c.owner, ti.c.map_kwargs,
                    ti.c.rendered_map_index,
                )
                .where(*cond)
                .order_by(ti.c.map_index)
                .offset(offset)
                .limit(limit)
            ).all()  # fmt: skip
        return run, counts, [InstanceLine(*row) for row in rows]


@dataclass(frozen=True)
class GroupInstance:
    """One instance of a mapped task group (issue 25 item 7): its tasks' states there."""

    map_index: int
    states: dict[str, str]  # task_id -> state of that task's instance map_index
    names: dict[str, str]  # task_id -> its map_index_template name, where it has one


class GroupPagesStore(StoreBase):
    def group_instances(
        self, run_id: str, group: str, *, offset: int, limit: int
    ) -> tuple[RunRecord, tuple[str, ...], int, list[GroupInstance]]:
        """The run, the tasks of its mapped task group ``group``, how many instances
        the group has, and ``limit`` of them from map index ``offset``, each with its
        tasks' states; :class:`NotFoundError` for an unknown run or a group the run's
        DAG version does not map."""
        ti = m.task_instances
        run = self.get_run(run_id)  # type: ignore[attr-defined]
        spec = self.spec(run.dag_id, run.version_hash)  # type: ignore[attr-defined]
        members = spec.group_members(group)
        if not members:
            raise NotFoundError(f"run {run_id!r} has no mapped task group {group!r}")
        cond = [ti.c.run_pk == run.id, ti.c.task_id.in_(members)]
        with self.read() as conn:
            total = conn.execute(select(func.max(ti.c.map_index)).where(*cond)).scalar_one_or_none()
            rows = conn.execute(
                select(ti.c.map_index, ti.c.task_id, ti.c.state, ti.c.rendered_map_index)
                .where(*cond, ti.c.map_index >= offset, ti.c.map_index < offset + limit)
                .order_by(ti.c.map_index, ti.c.task_id)
            ).all()
        by_index: dict[int, GroupInstance] = {}
        for r in rows:
            inst = by_index.setdefault(r.map_index, GroupInstance(r.map_index, {}, {}))
            inst.states[r.task_id] = r.state
            if r.rendered_map_index:
                inst.names[r.task_id] = r.rendered_map_index
        count = (total + 1) if total is not None and total >= 0 else 0
        return run, members, count, [by_index[i] for i in sorted(by_index) if i >= 0]
