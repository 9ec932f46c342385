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
