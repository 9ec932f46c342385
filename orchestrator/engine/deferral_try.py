"""Inside a task process: a try that defers, and a try resumed by its trigger (issue 30).

``ctx.defer(...)`` (``raise TaskDeferred``) ends the try with a ``defer`` outcome the
worker records (``store.defer_task``): the trigger's classpath and kwargs, checked
here first (the class must import, the kwargs be JSON, ``method_name`` a function of
the DAG file), so a mistake fails the try at once with the reason instead of in the
triggerer. A resumed try (the job carries ``next_method``) calls that function with
``(ctx, event, **kwargs)``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from orchestrator.authoring.triggers import (
    BaseTrigger,
    TaskDeferred,
    TriggerImportError,
    dag_module_name,
    dump_kwargs,
    import_trigger_class,
    load_kwargs,
    timeout_seconds,
)

DEFERRED_TRY = "deferred"  # the worker's outbox state of a try that deferred


def _method(fn: Any, job: dict[str, Any], name: str) -> Any:
    # an operator class's method (Airflow's self.defer, orchestrator.airflow): its task's
    # function is the operator's bound method, which says how to call the other one
    hook = getattr(getattr(fn, "__self__", None), "resume_method", None)
    if callable(hook):
        found = hook(name)
        if found is not None:
            return found
    found = getattr(fn, "__globals__", {}).get(name)
    if found is None:
        module = sys.modules.get(dag_module_name(job["fileloc"]))
        found = getattr(module, name, None)
    return found if callable(found) else None


def deferral_outcome(
    exc: TaskDeferred, fn: Any, job: dict[str, Any], logger: logging.Logger
) -> dict[str, Any]:
    """The outcome of a try that raised TaskDeferred: ``defer`` or a failure saying why."""

    def fail(message: str) -> dict[str, Any]:
        logger.error("failed: cannot defer: %s", message)
        return {"ok": False, "error": f"cannot defer: {message}", "exit_status": None}

    trigger = exc.trigger
    if not isinstance(trigger, BaseTrigger):
        return fail(f"trigger must be a BaseTrigger, got {type(trigger).__name__}")
    if not isinstance(exc.method_name, str) or _method(fn, job, exc.method_name) is None:
        return fail(
            f"method_name {exc.method_name!r} is not a function of {job['fileloc']} "
            "(it is called as method_name(ctx, event) when the trigger fires)"
        )
    try:
        serialized = trigger.serialize()
        classpath, kwargs = serialized
        if not isinstance(classpath, str) or not isinstance(kwargs, dict):
            raise ValueError("serialize() must return (classpath, kwargs dict)")
        import_trigger_class(classpath, job["fileloc"])  # the triggerer will import it too
        kwargs_json = dump_kwargs(kwargs)
        next_kwargs = dump_kwargs(exc.kwargs or {}, "ctx.defer kwargs")
        seconds = timeout_seconds(exc.timeout)
    except TriggerImportError as err:
        return fail(f"{job['fileloc']}: {err}")
    except Exception as err:  # noqa: BLE001 - the user's serialize() or a bad value
        return fail(f"{type(trigger).__name__}: {type(err).__name__}: {err}")
    logger.info(
        "deferred: waiting for trigger %s%s; resuming in %s",
        classpath,
        f" (timeout {seconds:g}s)" if seconds else "",
        exc.method_name,
    )
    return {
        "ok": False,
        "defer": {
            "classpath": classpath,
            "kwargs": kwargs_json,
            "method_name": exc.method_name,
            "next_kwargs": next_kwargs,
            "timeout": seconds,
        },
        "exit_status": None,
    }


def resume(fn: Any, job: dict[str, Any], ctx: Any, logger: logging.Logger) -> Any:
    """Call the deferred task's ``next_method(ctx, event, **kwargs)``."""
    name = job["next_method"]
    method = _method(fn, job, name)
    if method is None:
        raise RuntimeError(f"{job['fileloc']} no longer defines {name}(ctx, event)")
    stored = load_kwargs(job.get("next_kwargs")) or {}
    logger.info("resuming in %s after the trigger fired", name)
    return method(ctx, stored.get("event"), **(stored.get("kwargs") or {}))
