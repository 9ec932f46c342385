"""Results of any task of a run, and values a try pushed (issue 25 item 3).

A running try reads them through its worker (``ti.xcom_pull``, ``ctx.result``;
engine/xcom_lookup.py), never the database itself. ``return_value`` is the task's
result (``task_instances.result``); any other key is that key of its dict result
(``multiple_outputs``) or, failing that, a value the task pushed (``task_xcoms``).
A pull of a task that has not finished is a :class:`StateError` naming it and its state.
A push is fenced like every write of a try: only while that try is running.

>>> store.pull_result(ti_id, "extract", "return_value", None)   # doctest: +SKIP
{'rows': 1200}
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, insert, select

from orchestrator.errors import NotFoundError, StateError
from orchestrator.states import TASK_FINISHED, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase

ti, xc = m.task_instances, m.task_xcoms
RETURN_VALUE = "return_value"


class XcomStore(StoreBase):
    def push_xcom(self, ti_id: int, try_number: int, key: str, value: str) -> None:
        """Store ``value`` (JSON text) under ``key`` for the running try ``try_number`` of
        instance ``ti_id``; a second push of the key replaces the first. A
        :class:`StateError` if that try is not running (its lease was lost, it was
        cleared)."""
        if key == RETURN_VALUE:
            raise StateError(f"xcom_push: key {RETURN_VALUE!r} is the task's result: return it")
        with self.write() as conn:
            row = conn.execute(
                select(ti.c.id).where(
                    ti.c.id == ti_id,
                    ti.c.try_number == try_number,
                    ti.c.state == TaskState.RUNNING,
                )
            ).first()
            if row is None:
                raise StateError(f"xcom_push {key!r}: try {try_number} is no longer running")
            conn.execute(delete(xc).where(xc.c.ti_id == ti_id, xc.c.key == key))
            conn.execute(
                insert(xc).values(ti_id=ti_id, key=key, try_number=try_number, value=value)
            )

    def pull_result(self, ti_id: int, task_id: str, key: str, map_indexes: Any) -> str | None:
        """The JSON text of ``key`` of task ``task_id`` in the run of instance ``ti_id``:
        one value, or for a mapped task a list in map order (``map_indexes``: an int
        picks one instance, a list several). A finished task that did not succeed gives
        null, as in Airflow. Inside a mapped task group, a pull of another task of the
        group reads the same instance's, as in Airflow (issue 25 item 7)."""
        with self.read() as conn:
            here = conn.execute(
                select(ti.c.run_pk, ti.c.task_id, ti.c.map_index).where(ti.c.id == ti_id)
            ).first()
            if here is None:
                raise NotFoundError(f"no task instance {ti_id}")
            run_pk = here.run_pk
            if map_indexes is None and here.map_index >= 0:
                run = conn.execute(
                    select(m.dag_runs.c.dag_id, m.dag_runs.c.version_hash).where(
                        m.dag_runs.c.id == run_pk
                    )
                ).one()
                spec = self.spec(run.dag_id, run.version_hash)  # type: ignore[attr-defined]
                group = spec.mapped_group_of(here.task_id)
                if group is not None and task_id in spec.group_members(group):
                    map_indexes = here.map_index
            rows = conn.execute(
                select(ti.c.id, ti.c.map_index, ti.c.state, ti.c.try_number, ti.c.result)
                .where(ti.c.run_pk == run_pk, ti.c.task_id == task_id)
                .order_by(ti.c.map_index)
            ).all()
            if not rows:
                raise NotFoundError(f"this run has no task {task_id!r}")
            mapped = [r for r in rows if r.map_index >= 0]
            chosen = mapped or rows
            if map_indexes is not None:
                wanted = map_indexes if isinstance(map_indexes, list) else [map_indexes]
                by_index = {r.map_index: r for r in chosen}
                missing = [i for i in wanted if i not in by_index]
                if missing:
                    raise NotFoundError(f"task {task_id!r} has no map index {missing[0]}")
                chosen = [by_index[i] for i in wanted]
            for r in chosen:
                if r.state not in TASK_FINISHED:
                    where = f"[{r.map_index}]" if r.map_index >= 0 else ""
                    raise StateError(
                        f"task {task_id!r}{where} has not finished yet (state {r.state}): "
                        "its results can be pulled once it has"
                    )
            pushed: dict[int, str] = {}
            if key != RETURN_VALUE:
                found = conn.execute(
                    select(xc.c.ti_id, xc.c.try_number, xc.c.value).where(
                        xc.c.ti_id.in_([r.id for r in chosen]), xc.c.key == key
                    )
                ).all()
                tries = {r.id: r.try_number for r in chosen}
                pushed = {f.ti_id: f.value for f in found if tries.get(f.ti_id) == f.try_number}
        values = [_value_of(r, key, pushed) for r in chosen]
        if map_indexes is None and not mapped or isinstance(map_indexes, int):
            return values[0]
        return "[" + ",".join("null" if v is None else v for v in values) + "]"


def _value_of(row: Any, key: str, pushed: dict[int, str]) -> str | None:
    if row.state != TaskState.SUCCESS:
        return None
    if key == RETURN_VALUE:
        return row.result
    result = json.loads(row.result) if row.result is not None else None
    if isinstance(result, dict) and key in result:  # multiple_outputs: a key of it
        return json.dumps(result[key])
    return pushed.get(row.id)


def delete_xcoms_of(conn: Any, ti_ids: Any) -> None:
    """Delete the pushed values of the instances ``ti_ids`` (ids or a select of them),
    in the caller's transaction (a clear)."""
    conn.execute(delete(xc).where(xc.c.ti_id.in_(ti_ids)))
