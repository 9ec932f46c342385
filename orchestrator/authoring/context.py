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
)
from orchestrator.authoring.template_context import template_variables
from orchestrator.errors import ResultLookupError

_MISSING: Any = object()
RETURN_VALUE = "return_value"  # the key of a task's result (Airflow's)
MAX_OUTLET_EXTRA_BYTES = 65536  # as an external event's extra (store.assets.asset_store)


@dataclass(frozen=True)
class AssetEvent:
    """One asset event that triggered this run (``ctx.triggering_asset_events``)."""

    id: int
    uri: str
    at: datetime
    extra: dict[str, Any]
    source_dag_id: str | None = None
    source_run_id: str | None = None
    source_task_id: str | None = None
    source_try_number: int | None = None
    emitter: str | None = None


def asset_events_of(items: Any) -> tuple[AssetEvent, ...]:
    """The job's JSON-ready events as :class:`AssetEvent` records."""
    out = []
    for item in items or ():
        known = {k: v for k, v in item.items() if k in AssetEvent.__dataclass_fields__}
        known["at"] = (
            datetime.fromisoformat(known["at"])
            if isinstance(known.get("at"), str)
            else known.get("at")
        )
        out.append(AssetEvent(**known))
    return tuple(out)


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
    # issue 25 item 7: upstream tasks of its mapped task group, whose results here are
    # this instance's (map_indexes= asks the store for others)
    same_instance: tuple[str, ...] = ()
    run_type: str = "manual"  # issue 26: scheduled, manual, backfill... (dag_run.run_type)
    # issue 16: where ctx.variable / ctx.connection and var / conn in templates read
    credentials: CredentialSource | None = field(default=None, repr=False)
    # issue 15: the task's outlet URIs; the events that started an asset-triggered run
    outlets: tuple[str, ...] = ()
    triggering_asset_events: tuple[AssetEvent, ...] = ()
    _outlet_extras: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    # the DAG's timezone: ds, ds_nodash and ts are in it, as in shell templates
    timezone: str = "UTC"
    # issue 25: the conf the run was triggered with, as given ({{ dag_run.conf }})
    conf: dict[str, Any] = field(default_factory=dict)
    # issue 25: asks the worker (kind, request) -> reply; results of any task, pushes
    ask: Any = field(default=None, repr=False, compare=False)
    max_result_bytes: int = 65536
    # the try's masker (secrets in a pushed value are masked, as in its result)
    mask_value: Any = field(default=None, repr=False, compare=False)

    @property
    def ds(self) -> str:
        """The logical date as ``YYYY-MM-DD`` in the DAG's timezone (Airflow's ``ds``)."""
        return self._local().strftime("%Y-%m-%d")

    @property
    def ds_nodash(self) -> str:
        return self._local().strftime("%Y%m%d")

    @property
    def ts(self) -> str:
        """The logical date in ISO 8601, in the DAG's timezone."""
        return self._local().isoformat()

    def _local(self, timezone: str | None = None) -> datetime:
        from zoneinfo import ZoneInfo

        return self.logical_date.astimezone(ZoneInfo(timezone or self.timezone))

    def outlet_event(self, asset: Any, extra: dict[str, Any] | None = None) -> None:
        """Add ``extra`` (a JSON object) to the event this try records for ``asset``,
        one of the task's outlets (an Asset or its URI); recorded only if the try
        succeeds. Called twice for one asset, the extras are merged."""
        uri = getattr(asset, "uri", asset)
        if uri not in self.outlets:
            raise ValueError(
                f"task {self.task_id!r}: {uri!r} is not one of its outlets "
                f"({', '.join(self.outlets) or 'none'})"
            )
        if extra is None:
            extra = {}
        if not isinstance(extra, dict):
            raise TypeError(f"outlet_event extra must be a dict, got {type(extra).__name__}")
        merged = {**self._outlet_extras.get(uri, {}), **extra}
        try:
            size = len(json.dumps(merged, allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise TypeError(f"outlet_event extra is not JSON-serialisable: {exc}") from None
        if size > MAX_OUTLET_EXTRA_BYTES:
            raise ValueError(
                f"outlet_event extra for {uri!r} is {size} bytes of JSON, over "
                f"{MAX_OUTLET_EXTRA_BYTES}"
            )
        self._outlet_extras[uri] = merged

    def outlet_outcome(self) -> dict[str, Any]:
        """What a successful try's reply carries for its outlet events (may be empty)."""
        return {"outlet_events": dict(self._outlet_extras)} if self._outlet_extras else {}

    def defer(
        self,
        *,
        trigger: Any,
        method_name: str,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
    ) -> None:
        """Give up this task's worker slot until ``trigger`` fires (issue 30).

        The try ends here (``deferred``); when the trigger yields its first
        :class:`~orchestrator.TriggerEvent`, a fresh process of the same try calls
        ``method_name(ctx, event, **kwargs)``, a function of this DAG file. A
        ``timeout`` (timedelta or seconds) fails the try if the trigger has not fired
        by then. Airflow's ``self.defer``; raises :class:`~orchestrator.TaskDeferred`.
        """
        from orchestrator.authoring.triggers import TaskDeferred

        raise TaskDeferred(trigger=trigger, method_name=method_name, kwargs=kwargs, timeout=timeout)

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

    def result(
        self, task_id: str, key: str = RETURN_VALUE, map_indexes: int | list[int] | None = None
    ) -> Any:
        """The result (``key``: that key of its dict result, else a value it pushed) of
        task ``task_id`` of this run, upstream or not; a mapped task's is a list in map
        order (``map_indexes``: one instance, or a list of them). A task that has not
        finished yet is an error naming it and its state; one that did not succeed
        gives None. An upstream task's result is already here: no lookup."""
        if (
            task_id in self.upstream_ids
            and (key == RETURN_VALUE or task_id not in self.mapped_over)
            and not (map_indexes is not None and task_id in self.same_instance)
        ):
            value = self.upstream(task_id)
            if key != RETURN_VALUE:  # a key of its dict result (multiple_outputs), else pushed
                if isinstance(value, dict) and key in value:
                    return value[key]
                return self._pull(task_id, key, map_indexes)
            if map_indexes is not None and isinstance(value, list):
                if isinstance(map_indexes, list | tuple):
                    return [value[i] for i in map_indexes]
                return value[map_indexes]
            return value
        return self._pull(task_id, key, map_indexes)

    def _pull(self, task_id: str, key: str, map_indexes: Any) -> Any:
        indexes = list(map_indexes) if isinstance(map_indexes, list | tuple) else map_indexes
        raw = self._ask("xcom_pull", {"task_id": task_id, "key": key, "map_indexes": indexes})
        return None if raw is None else json.loads(raw)

    def push(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON, at most ``max_result_bytes``) under ``key`` for this try;
        any later task of the run reads it with ``ti.xcom_pull(task_ids=..., key=key)``
        once this one has finished."""
        if not isinstance(key, str) or not key or key == RETURN_VALUE:
            raise ValueError(
                f"task {self.task_id!r}: xcom_push needs a key other than {RETURN_VALUE!r} "
                f"(got {key!r}): return the task's result instead"
            )
        try:
            text = json.dumps(
                value if self.mask_value is None else self.mask_value(value), allow_nan=False
            )
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"task {self.task_id!r}: xcom_push key {key!r}: the value is not JSON "
                f"({type(value).__name__}): {exc}"
            ) from None
        size = len(text.encode())
        if size > self.max_result_bytes:
            raise ValueError(
                f"task {self.task_id!r}: xcom_push key {key!r}: the value is {size} bytes of "
                f"JSON, over the {self.max_result_bytes}-byte limit (max_result_bytes)"
            )
        self._ask("xcom_push", {"key": key, "value": text})

    def _ask(self, kind: str, request: dict[str, Any]) -> Any:
        if self.ask is None:
            raise ResultLookupError(
                f"task {self.task_id!r}: {kind} of {request.get('task_id') or request['key']!r}"
                ": no worker to ask here (only upstream results are at hand)"
            )
        reply = self.ask(kind, json.dumps(request))
        if "error" in reply:
            raise ResultLookupError(f"task {self.task_id!r}: {kind}: {reply['error']}")
        return reply.get("found")

    def set_variable(
        self, name: str, value: Any, *, serialize_json: bool = False, description: str | None = None
    ) -> None:
        """Create or replace variable ``name`` (Airflow's ``Variable.set``, issue 26): a
        string, or with ``serialize_json`` any JSON value; at most ``max_result_bytes``.
        The worker stores it (encrypted, as every variable); later tries read it."""
        if serialize_json:
            try:
                text = json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"task {self.task_id!r}: Variable.set({name!r}): the value is not JSON "
                    f"({type(value).__name__}): {exc}"
                ) from None
        elif isinstance(value, str):
            text = value
        else:
            raise TypeError(
                f"task {self.task_id!r}: Variable.set({name!r}): the value is a "
                f"{type(value).__name__}; give a string, or serialize_json=True"
            )
        size = len(text.encode())
        if size > self.max_result_bytes:
            raise ValueError(
                f"task {self.task_id!r}: Variable.set({name!r}): the value is {size} bytes, "
                f"over the {self.max_result_bytes}-byte limit (max_result_bytes)"
            )
        request = {"key": name, "value": text, "is_json": serialize_json}
        self._ask("variable_set", request | {"description": description})

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
        """Variables for templates (shell commands and ``env=``, HTTP requests, sensors'
        arguments); ``ds``/``ts`` are in the DAG's timezone
        (:func:`~orchestrator.authoring.template_context.template_variables`)."""
        return template_variables(self, timezone)
