"""The task context: what a running task knows about itself."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from orchestrator.authoring.credentials import (
    Connection,
    CredentialSource,
    read_connection,
    read_variable,
    template_credentials,
)

_MISSING: Any = object()


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
    # issue 16: where ctx.variable / ctx.connection and var / conn in templates read
    credentials: CredentialSource | None = field(default=None, repr=False)

    def upstream(self, task_id: str) -> Any:
        """The JSON return value of upstream task ``task_id`` (None if it returned None)."""
        if task_id not in self.upstream_ids:
            raise KeyError(
                f"task {self.task_id!r} has no upstream task {task_id!r} "
                f"(upstream: {', '.join(self.upstream_ids) or 'none'})"
            )
        raw = self._results.get(task_id)
        return None if raw is None else json.loads(raw)

    def variable(self, name: str, default: Any = _MISSING, deserialize_json: bool = False) -> Any:
        """Variable ``name`` (parsed as JSON with ``deserialize_json``); ``default`` when
        it exists nowhere, else :class:`CredentialNotFoundError` naming it. A secret
        value is masked (``***``) in everything this try writes."""
        try:
            return read_variable(self.credentials, name, deserialize_json)
        except LookupError:
            if default is _MISSING:
                raise
            return default

    def connection(self, name: str) -> Connection:
        """Connection ``name`` (``.host``, ``.login``, ``.password``, ``.port``,
        ``.schema``, ``.extra``, ``.uri``); its password and extra are masked."""
        return read_connection(self.credentials, name)

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
            **template_credentials(self.credentials),
        }
