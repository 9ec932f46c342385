"""Deferrable tasks: triggers, their events, and how a task defers (issue 30).

A task gives up its worker slot with ``ctx.defer(trigger=..., method_name="resume")``
(or Airflow's ``raise TaskDeferred(...)``). The trigger is a user class with an
``async def run(self)`` that yields :class:`TriggerEvent` and a ``serialize()`` that
returns ``(classpath, kwargs)``: the triggerer rebuilds it from those, wherever it
runs, as Airflow's does. When the trigger yields, the task's next try process calls
``method_name(ctx, event)`` (a function of the DAG file) with the try number unchanged::

    import asyncio
    from orchestrator import BaseTrigger, TriggerEvent, task

    class CountdownTrigger(BaseTrigger):
        def __init__(self, seconds):
            super().__init__()
            self.seconds = seconds

        def serialize(self):
            return (f"{type(self).__module__}.CountdownTrigger", {"seconds": self.seconds})

        async def run(self):
            await asyncio.sleep(self.seconds)
            yield TriggerEvent({"waited": self.seconds})

    @task
    def wait(ctx):
        ctx.defer(trigger=CountdownTrigger(30), method_name="resume")

    def resume(ctx, event):
        return event["waited"]

This module is pure: it holds the classes, the JSON form of trigger kwargs (datetimes
and timedeltas survive it) and the import of a trigger class by its classpath.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from orchestrator.errors import OrchestratorError

MAX_TRIGGER_KWARGS_BYTES = 65536  # a trigger's kwargs as JSON; the event's payload too
DAG_MODULE_PREFIX = "orchestrator_dag_"  # the module name the loader gives a DAG file


@dataclass(frozen=True)
class TriggerEvent:
    """What a trigger yields when its condition holds; ``payload`` is JSON-ready and
    reaches the resumed task as ``event``."""

    payload: Any = None


class BaseTrigger:
    """The base of every trigger (Airflow's ``BaseTrigger``).

    A subclass implements ``serialize()`` -> ``(classpath, kwargs)`` (``cls(**kwargs)``
    must rebuild it) and ``async def run(self)``, an async generator that yields a
    :class:`TriggerEvent`; the first event resumes the task. ``run`` must never block
    the event loop (``time.sleep``, blocking I/O): the triggerer names a trigger that
    does, in its log and metrics. ``cleanup()`` is called when the trigger is stopped.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.trigger_id: int | None = None  # set by the triggerer
        self.reads: Any = None  # the triggerer's store reads (built-in triggers use them)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__} must implement serialize()")

    def run(self) -> AsyncIterator[TriggerEvent]:
        raise NotImplementedError(f"{type(self).__name__} must implement async def run()")

    def cleanup(self) -> None:
        """Called when the triggerer stops this trigger (fired, cancelled, or moved)."""

    def __repr__(self) -> str:
        try:
            path, kwargs = self.serialize()
        except Exception:  # noqa: BLE001
            return f"<{type(self).__name__}>"
        return f"<{path} {kwargs}>"


class TaskDeferred(BaseException):  # noqa: N818 - Airflow's name
    """Raised by a task to defer (``ctx.defer`` raises it): Airflow's ``TaskDeferred``.

    A ``BaseException``, as Airflow's, so an ``except Exception`` in the task does not
    swallow it."""

    def __init__(
        self,
        *,
        trigger: BaseTrigger,
        method_name: str,
        kwargs: dict[str, Any] | None = None,
        timeout: timedelta | float | None = None,
    ) -> None:
        super().__init__(f"deferred to {trigger!r}, resuming in {method_name}")
        self.trigger = trigger
        self.method_name = method_name
        self.kwargs = kwargs
        self.timeout = timeout


class TriggerImportError(OrchestratorError):
    """A trigger class that cannot be imported by its classpath."""


# -- kwargs as JSON: datetimes and timedeltas survive -----------------------------------
def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r} in trigger kwargs: give it a timezone")
        return {"__datetime__": value.isoformat()}
    if isinstance(value, timedelta):
        return {"__timedelta__": value.total_seconds()}
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__datetime__"}:
            return datetime.fromisoformat(value["__datetime__"])
        if set(value) == {"__timedelta__"}:
            return timedelta(seconds=value["__timedelta__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def dump_kwargs(kwargs: Any, what: str = "trigger kwargs") -> str:
    """``kwargs`` as JSON text; ValueError naming ``what`` if it cannot be."""
    try:
        text = json.dumps(_encode(kwargs), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} are not JSON-serialisable: {exc}") from None
    if len(text.encode()) > MAX_TRIGGER_KWARGS_BYTES:
        raise ValueError(
            f"{what} are {len(text.encode())} bytes of JSON, over {MAX_TRIGGER_KWARGS_BYTES}"
        )
    return text


def load_kwargs(text: str | None) -> Any:
    return _decode(json.loads(text)) if text else {}


# -- importing a trigger class ----------------------------------------------------------
def dag_module_name(path: str) -> str:
    """The module name :func:`orchestrator.authoring.loader.load_file` gives ``path``."""
    return DAG_MODULE_PREFIX + hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:12]


def import_trigger_class(classpath: str, fileloc: str | None = None) -> type[BaseTrigger]:
    """The trigger class named ``module.Class``: a module on the path (the DAG file's
    folder is put first, as for its imports), or a class of the DAG file ``fileloc``
    itself (its loader module name). TriggerImportError says why not."""
    module_name, _, name = classpath.rpartition(".")
    if not module_name or not name:
        raise TriggerImportError(f"trigger classpath {classpath!r} is not 'module.Class'")
    try:
        if module_name.startswith(DAG_MODULE_PREFIX) and module_name not in sys.modules:
            if fileloc is None or dag_module_name(fileloc) != module_name:
                raise TriggerImportError(
                    f"trigger class {classpath!r} belongs to a DAG file that is not this task's"
                )
            from orchestrator.authoring.loader import load_file

            load_file(fileloc)
        elif fileloc:
            folder = os.path.dirname(os.path.abspath(fileloc))
            if folder not in sys.path:
                sys.path.insert(0, folder)
        module = importlib.import_module(module_name)
        cls = getattr(module, name)
    except TriggerImportError:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever importing user code raised
        raise TriggerImportError(
            f"trigger class {classpath!r} cannot be imported: {type(exc).__name__}: {exc}"
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, BaseTrigger)):
        raise TriggerImportError(f"{classpath!r} is not a BaseTrigger subclass")
    return cls


def timeout_seconds(timeout: Any) -> float | None:
    """A deferral's timeout in seconds (a timedelta or a number); ValueError if bad."""
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise ValueError(f"timeout must be a timedelta or seconds, got {type(timeout).__name__}")
    if seconds <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return seconds
