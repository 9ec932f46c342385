"""``ti`` / ``task_instance``: a try's task instance as a task function and a template
see it (issue 25): ``{{ ti.xcom_pull(task_ids='extract') }}``.

>>> ti.xcom_pull(task_ids="extract")          # doctest: +SKIP
{'rows': 1200}
"""

from __future__ import annotations

from typing import Any


class TaskInstanceView:
    """``ti`` / ``task_instance``: this try's task instance (``dag_id``, ``task_id``,
    ``run_id``, ``try_number``, ``map_index``, ``log``), ``xcom_pull`` of any task's
    result in the run and ``xcom_push``."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self.dag_id: str = ctx.dag_id
        self.task_id: str = ctx.task_id
        self.run_id: str = ctx.run_id
        self.try_number: int = ctx.try_number
        self.map_index: int = ctx.map_index
        self.log = ctx.log

    def xcom_pull(
        self,
        task_ids: str | list[str] | None = None,
        key: str | None = "return_value",
        map_indexes: int | list[int] | None = None,
    ) -> Any:
        """The result of task ``task_ids`` of this run, upstream or not (a list of ids: a
        list of results); ``key``: a value it pushed (or that key of its dict result);
        ``map_indexes`` picks instances of a mapped task (``ctx.result``)."""
        if task_ids is None:
            raise ValueError(f"task {self.task_id!r}: xcom_pull needs task_ids=...")
        if isinstance(task_ids, list | tuple):
            return [self.xcom_pull(t, key, map_indexes) for t in task_ids]
        return self._ctx.result(task_ids, key or "return_value", map_indexes)

    def xcom_push(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON) under ``key`` for later tasks of the run (``ctx.push``)."""
        self._ctx.push(key, value)

    def __repr__(self) -> str:
        return f"<TaskInstance {self.dag_id}.{self.task_id} {self.run_id} try {self.try_number}>"
