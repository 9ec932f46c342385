"""Inside a task process: the task-level ``on_execute`` / ``on_success`` hooks, and the
outcomes a task chooses itself (``raise Skip`` / ``raise Fail``, a shell task's
``skip_on_exit_code``) (issue 14).

The hooks run in the try's own process, before the task's work and after its success
(Airflow's ``on_execute_callback`` / ``on_success_callback``), with the task context;
their output goes to the try's log. A hook that raises is logged there and changes
nothing: the try's outcome is the task's. ``on_failure`` and ``on_retry`` stay where
they were (alerts, after the store recorded the outcome: observability/alerts).

An outcome carries ``control``: ``"skip"`` or ``"fail"`` (no retry). The worker turns
it into the try state it reports with :func:`try_state_of`.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any

from orchestrator.authoring.context_names import CallbackContext
from orchestrator.states import FAILED_NOW, SKIPPED_TRY

SKIP = "skip"
FAIL = "fail"


def run_hook(
    job: dict[str, Any],
    ctx: Any,
    dags: Callable[[], dict[str, Any]],
    logger: logging.Logger,
    hook: str,
) -> None:
    """Call the task's ``hook`` (if the task declares it) with ``ctx``; never raises.
    ``dags()`` imports the DAG file (cached by the task process)."""
    if hook not in (job.get("hooks") or ()):
        return
    try:
        dag = dags().get(job["dag_id"])
        task = dag.tasks.get(job["task_id"]) if dag is not None else None
        fn = task.callbacks.get(hook) if task is not None else None
        if fn is None:
            logger.warning("%s: %s no longer defines it; not called", hook, job["fileloc"])
            return
        fn(CallbackContext(ctx, task))  # issue 25: Airflow's context dict, ctx's attributes
    except BaseException as exc:  # noqa: BLE001 - the hook's error, logged only
        text = "".join(traceback.format_exception(exc)).rstrip()
        logger.error("%s raised (the try's outcome is unchanged):\n%s", hook, text)


def controlled(logger: logging.Logger, exc: BaseException) -> dict[str, Any]:
    """The outcome of a task that raised Skip or Fail."""
    from orchestrator.errors import Skip

    reason = str(exc) or type(exc).__name__
    if isinstance(exc, Skip):
        return skipped(logger, f"Skip raised: {reason}", None)
    logger.error("failed: Fail raised: %s (no retry)", reason)
    return {"ok": False, "control": FAIL, "error": f"Fail: {reason}", "exit_status": None}


def skipped(logger: logging.Logger, reason: str, exit_status: int | None) -> dict[str, Any]:
    logger.info("skipped: %s", reason)
    return {"ok": False, "control": SKIP, "error": reason, "exit_status": exit_status}


def try_state_of(outcome: dict[str, Any]) -> str:
    """The try state the worker reports for an outcome that is not a success."""
    control = outcome.get("control")
    if control == SKIP:
        return SKIPPED_TRY
    if control == FAIL:
        return FAILED_NOW
    return "failed"
