"""The task context: what a running task knows about itself."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class TaskContext:
    """Passed to every Python task as its one argument.

    >>> @task                                             # doctest: +SKIP
    ... def report(ctx):
    ...     rows = ctx.upstream("extract")["rows"]
    ...     ctx.log.info("run %s try %s: %s rows", ctx.run_id, ctx.try_number, rows)
    """

    dag_id: str
    run_id: str
    task_id: str
    logical_date: datetime
    data_interval_start: datetime
    data_interval_end: datetime
    try_number: int
    params: dict[str, Any]
    idempotency_key: str
    log: logging.Logger
    upstream_ids: tuple[str, ...] = ()
    _results: dict[str, str | None] = field(default_factory=dict, repr=False)
    # a mapped task's instance: 0..n-1 (its item of the map); -1 for an unmapped task
    map_index: int = -1
    # the upstream tasks a mapped instance is mapped over: their lists are not sent to it
    mapped_over: tuple[str, ...] = ()

    def upstream(self, task_id: str) -> Any:
        """The JSON return value of upstream task ``task_id`` (None if it returned None);
        for a mapped upstream task, the list of its instances' results in map order."""
        if task_id not in self.upstream_ids:
            raise KeyError(
                f"task {self.task_id!r} has no upstream task {task_id!r} "
                f"(upstream: {', '.join(self.upstream_ids) or 'none'})"
            )
        if task_id in self.mapped_over:
            raise KeyError(
                f"task {self.task_id!r} is mapped over {task_id!r}: instance {self.map_index} "
                f"gets its item as an argument, not {task_id!r}'s whole list"
            )
        raw = self._results.get(task_id)
        return None if raw is None else json.loads(raw)

    def template_vars(self, timezone: str) -> dict[str, Any]:
        """Variables for shell-task templates; ``ds``/``ts`` are in the DAG's timezone."""
        from zoneinfo import ZoneInfo

        local = self.logical_date.astimezone(ZoneInfo(timezone))
        return {
            "dag_id": self.dag_id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "ds": local.strftime("%Y-%m-%d"),
            "ds_nodash": local.strftime("%Y%m%d"),
            "ts": local.isoformat(),
            "logical_date": self.logical_date.isoformat(),
            "data_interval_start": self.data_interval_start.isoformat(),
            "data_interval_end": self.data_interval_end.isoformat(),
            "try_number": self.try_number,
            "params": self.params,
            "idempotency_key": self.idempotency_key,
            "map_index": self.map_index,
        }
