"""A try of a ``@task.virtualenv`` or ``@task.external_python`` task, in a task process.

The task process finds (or builds, :mod:`orchestrator.engine.venv_cache`) the
interpreter, then runs :mod:`orchestrator.engine.venv_bootstrap` with it as a child
process, passing the function's source and a context built from JSON in a private
temporary folder. The child is an ordinary child of the task process: its output goes
to the try's log through the same pipe as a shell command's (and under the same cap),
and a timeout, a lost lease or a kill ends it with the try, as every process a try
starts (:mod:`orchestrator.engine.proctree`). The build's output goes to the try's
log too; a failed build is a failed try whose error holds the installer's message.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from orchestrator.engine.venv_cache import VenvBuildError, ensure_venv

BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "venv_bootstrap.py")
_TAIL = 8192
# the worker's module search path must not leak into a build: pip would find the
# worker's packages there and call them "already satisfied"
_BUILD_DROPS = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH")


class _Tail:
    """Forwards ``write_bytes`` to the try's log and keeps the last output, for the
    error of a failed build."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self.data = b""

    def write_bytes(self, data: bytes) -> None:
        self.log.write_bytes(data)
        self.data = (self.data + data)[-_TAIL:]


def call_arguments(task: Any, ctx: Any) -> dict[str, Any]:
    """A called task's arguments with their references resolved (JSON for the other
    interpreter), and whether the context goes first."""
    from orchestrator.authoring.xcom_arg import resolve

    args = resolve(list(task.call_args), ctx.upstream, task.task_id, ctx.params)
    kwargs = resolve(task.call_kwargs, ctx.upstream, task.task_id, ctx.params)
    return {"args": args, "kwargs": kwargs, "ctx_first": bool(task.ctx_first)}


def _context(job: dict[str, Any], ctx: Any) -> dict[str, Any]:
    local = ctx.template_vars(job["timezone"])
    data = {
        "dag_id": ctx.dag_id,
        "run_id": ctx.run_id,
        "task_id": ctx.task_id,
        "try_number": ctx.try_number,
        "params": ctx.params,
        "idempotency_key": ctx.idempotency_key,
        "logical_date": ctx.logical_date.isoformat(),
        "data_interval_start": ctx.data_interval_start.isoformat(),
        "data_interval_end": ctx.data_interval_end.isoformat(),
        "ds": local["ds"],
        "ts": local["ts"],
        "upstream": list(ctx.upstream_ids),
        "results": job.get("results") or {},
    }
    # a mapped task's index, wherever the runner keeps it (the job or the context)
    map_index = job.get("map_index", getattr(ctx, "map_index", None))
    if map_index is not None and map_index != -1:
        data["map_index"] = map_index
    return data


def _interpreter(spec: dict[str, Any]) -> str:
    """The base interpreter of a virtualenv, or the external one; VenvBuildError."""
    python = spec.get("python") or sys.executable
    if spec["kind"] == "external_python":
        if not (os.path.isfile(python) and os.access(python, os.X_OK)):
            raise VenvBuildError(f"external_python interpreter {python} is not an executable file")
        return python
    found = python if os.path.isabs(python) else shutil.which(python)
    if not found or not os.access(found, os.X_OK):
        raise VenvBuildError(f"virtualenv python {python!r} is not an executable on this worker")
    return found


def run_in_python_env(
    task: Any,
    job: dict[str, Any],
    ctx: Any,
    logfile: Any,
    logger: logging.Logger,
    run_command: Callable[..., int],
) -> dict[str, Any]:
    """Run ``task``'s function in its own interpreter; the try's outcome (as ``run_try``'s).

    ``run_command(argv, log, env=..., cwd=...)`` runs a child with its output copied into
    ``log`` (the runner's, so the log cap and pipe handling are the same as a shell's).
    """
    spec = task.python_env
    env = dict(os.environ)
    env.update(job.get("env") or {})
    env.update(
        ORCHESTRATOR_DAG_ID=ctx.dag_id,
        ORCHESTRATOR_RUN_ID=ctx.run_id,
        ORCHESTRATOR_TASK_ID=ctx.task_id,
        ORCHESTRATOR_TRY_NUMBER=str(ctx.try_number),
        ORCHESTRATOR_IDEMPOTENCY_KEY=ctx.idempotency_key,
    )
    cwd = job.get("cwd") or None
    for handler in logger.handlers:
        handler.flush()

    build_env = {k: v for k, v in env.items() if k not in _BUILD_DROPS}

    def run(argv: list[str]) -> tuple[int, str]:
        tail = _Tail(logfile)
        status = run_command(argv, tail, env=build_env, cwd=cwd)
        for handler in logger.handlers:
            handler.flush()
        return status, tail.data.decode("utf-8", "replace")

    try:
        python = _interpreter(spec)
        if spec["kind"] == "virtualenv":
            python = ensure_venv(
                job.get("venv_cache_dir")
                or os.path.join(tempfile.gettempdir(), "orchestrator-venvs"),
                python,
                spec["requirements"],
                spec["system_site_packages"],
                installer=job.get("venv_installer") or "auto",
                run=run,
                log=logger,
            )
    except VenvBuildError as exc:
        logger.error("failed: %s", exc.summary)
        return {"ok": False, "error": str(exc), "exit_status": None}
    except OSError as exc:
        return _failure(logger, f"cannot prepare the task's interpreter: {exc}")
    with tempfile.TemporaryDirectory(prefix="orchestrator-try-") as folder:
        source, out = os.path.join(folder, "in.json"), os.path.join(folder, "out.json")
        payload = {"function": task.python_source, "context": _context(job, ctx)}
        if getattr(task, "called", False):  # issue 25: a TaskFlow call's arguments
            try:
                payload.update(call_arguments(task, ctx))
                json.dumps(payload)
            except (TypeError, ValueError, KeyError) as exc:
                return _failure(logger, f"cannot pass the call's arguments: {exc}")
        with open(source, "w") as fh:
            json.dump(payload, fh)
        logger.info("running %s in %s", task.python_source["name"], python)
        for handler in logger.handlers:
            handler.flush()
        status = run_command(
            [python, "-I", "-u", BOOTSTRAP, source, out], logfile, env=env, cwd=cwd
        )
        logfile.end_of_output()
        try:
            with open(out) as fh:
                outcome = json.load(fh)
        except (OSError, ValueError):
            return _failure(
                logger, f"the task's interpreter {python} exited with status {status}", status
            )
    if not outcome.get("ok"):
        logger.error("failed: %s", outcome.get("error", "").rstrip())
        return {
            "ok": False,
            "error": outcome.get("error"),
            "exit_status": outcome.get("exit_status"),
        }
    result = outcome.get("result")
    if result is not None and len(result.encode()) > job["max_result_bytes"]:
        return _failure(
            logger,
            f"task {job['task_id']!r} key 'return_value': return value is "
            f"{len(result.encode())} bytes of JSON, over the "
            f"{job['max_result_bytes']}-byte limit (max_result_bytes)",
        )
    logger.info("succeeded")
    return {"ok": True, "result": result}


def _failure(
    logger: logging.Logger, message: str, exit_status: int | None = None
) -> dict[str, Any]:
    logger.error("failed: %s", message)
    return {"ok": False, "error": message, "exit_status": exit_status}
