"""``orchestrator tasks test``: run one task in this process, without the store.

Useful while writing a DAG: the task's log goes to the terminal, its return value is
printed, nothing is recorded, and upstream results are empty (``ctx.upstream``
returns None).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from orchestrator.authoring.context import TaskContext
from orchestrator.authoring.loader import DagImportError, load_file
from orchestrator.authoring.templating import render_shell
from orchestrator.engine.processor import dag_files
from orchestrator.engine.runner import _takes_argument
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.settings import Settings
from orchestrator.store.run_rows import make_run_id
from orchestrator.store.task_store import idempotency_key


def find_dag(settings: Settings, dag_id: str):  # -> DAG
    for path in dag_files(settings.dags_folder):
        try:
            dags = load_file(path)
        except DagImportError:
            continue
        for dag in dags:
            if dag.dag_id == dag_id:
                return dag
    raise NotFoundError(
        f"no DAG {dag_id!r} in {settings.dags_folder} (files with import errors were skipped)"
    )


def parse_date(text: str | None, timezone: str) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--logical-date: {text!r} is not an ISO date or datetime") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=ZoneInfo(timezone))
    return value.astimezone(UTC)


def run_task_test(
    settings: Settings, dag_id: str, task_id: str, logical_date: str | None, params: dict
) -> int:
    dag = find_dag(settings, dag_id)
    if task_id not in dag.tasks:
        raise NotFoundError(
            f"DAG {dag_id!r} has no task {task_id!r} (tasks: {', '.join(dag.tasks)})"
        )
    task = dag.tasks[task_id]
    when = parse_date(logical_date, dag.timezone)
    interval = dag.schedule.data_interval(when) if dag.schedule.kind != "none" else (when, when)
    logger = logging.getLogger(f"task.{dag_id}.{task_id}")
    logger.setLevel(logging.INFO)
    logger.handlers.clear()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
    run_id = make_run_id(dag_id, "test", when)
    ctx = TaskContext(
        dag_id=dag_id,
        run_id=run_id,
        task_id=task_id,
        logical_date=when,
        data_interval_start=interval[0],
        data_interval_end=interval[1],
        try_number=1,
        params={**dag.params, **params},
        idempotency_key=idempotency_key(dag_id, run_id, task_id),
        log=logger,
        upstream_ids=tuple(sorted(task.upstream_ids)),
    )
    if task.kind == "shell":
        shell = render_shell(task.command, ctx.template_vars(dag.timezone))
        logger.info("command: %s", shell.display)
        env = {**os.environ, **shell.env}
        code = subprocess.run(["/bin/sh", "-c", shell.script], env=env, check=False).returncode
        logger.info("exit status %s", code)
        return 0 if code == 0 else 1
    if task.kind == "http":
        from orchestrator.engine.http_task import run_http

        outcome = run_http(
            task.http,
            ctx.template_vars(dag.timezone),
            logger,
            max_result_bytes=settings.max_result_bytes,
            response_check=task.response_check,
            ctx=ctx,
        )
        if not outcome["ok"]:
            return 1
        print(outcome["result"])
        return 0
    if task.kind == "check":  # issue 15: a built-in sensor reads the store, never here
        logger.error(
            "task %s is a built-in %s sensor: the worker evaluates it against the store, so "
            "`tasks test` (which leaves the store untouched) cannot run it",
            task_id,
            (task.check or {}).get("type"),
        )
        return 1
    try:
        value = task.fn(ctx) if _takes_argument(task.fn) else task.fn()
    except Exception:
        logger.exception("task %s failed", task_id)
        return 1
    print(json.dumps(value, default=str))
    return 0
