"""``orchestrator tasks test``: run one task in this process, without the store.

Useful while writing a DAG: the task's log goes to the terminal, its return value is
printed, nothing is recorded. Upstream results are given (``--upstream-result
extract='{"rows": 3}'``), read from a stored run (``--from-run RUN_ID``, which also
gives the run's logical date and conf), or else empty (``ctx.upstream`` returns None).
A shell task runs with its ``env=`` and the ``ORCHESTRATOR_*`` variables a worker sets.
Exit status: 0 the task succeeded or skipped itself, 1 it failed (the CLI answers 2 for
bad arguments).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from orchestrator.authoring.context import TaskContext
from orchestrator.authoring.loader import DagImportError, load_file
from orchestrator.authoring.params import resolve as resolve_params
from orchestrator.authoring.task_controls import SHELLS
from orchestrator.authoring.taskflow import invoke, output_error
from orchestrator.authoring.templating import render_env, render_shell
from orchestrator.authoring.xcom_arg import resolve
from orchestrator.engine.fd_capture import fds_into
from orchestrator.engine.masking import MaskedStream, Masker
from orchestrator.engine.processor import dag_files
from orchestrator.engine.runner import _takes_argument
from orchestrator.engine.secrets_chain import SecretsChain, chain_asker
from orchestrator.engine.task_secrets import masked_source
from orchestrator.engine.xcom_lookup import tasks_test_asker
from orchestrator.errors import ConfigError, Fail, NotFoundError, ParamValidationError, Skip
from orchestrator.scheduling.mapping import group_of, task_sources
from orchestrator.settings import Settings
from orchestrator.store.runs.run_rows import make_run_id
from orchestrator.store.tasks.task_store import idempotency_key


def find_dag(settings: Settings, dag_id: str):  # -> DAG
    """The DAG ``dag_id``, imported here from the dags folder; NotFoundError, naming the
    files that could not be imported (the DAG may be in one of them), if none has it."""
    errors: list[str] = []
    for path in dag_files(settings.dags_folder):
        try:
            dags = load_file(path)
        except DagImportError as exc:
            errors.append(exc.message)
            continue
        for dag in dags:
            if dag.dag_id == dag_id:
                return dag
    skipped = f"; files with import errors: {' | '.join(errors)}" if errors else ""
    raise NotFoundError(f"no DAG {dag_id!r} in {settings.dags_folder}{skipped}")


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


def mapped_arguments(
    task,
    params: dict,
    map_index: int | None,
    map_value: dict | None,
    limit: int,
    results: dict[str, str | None] | None = None,
) -> tuple[int, dict | None]:
    """The map index and arguments ``tasks test`` runs a task with (None: not mapped).

    A mapped task runs one instance: with ``map_value`` (its mapped arguments, given
    explicitly), or item ``map_index`` (default 0) of its literal lists, params and
    upstream ``results`` (JSON, given or read from a stored run)."""
    from orchestrator.scheduling.mapping import (
        BadItem,
        MapError,
        map_items,
        resolve,
        task_sources,
    )

    if task.mapping is None:
        if map_value is not None or map_index is not None:
            raise ConfigError(f"task {task.task_id!r} is not mapped: drop --map-value/--map-index")
        return -1, None
    index = 0 if map_index is None else map_index
    kwargs = dict(task.mapping.get("partial") or {})
    if map_value is not None:
        return index, kwargs | map_value
    results = results or {}
    missing = [x for x in task_sources(task.mapping) if x not in results]
    if missing:
        raise ConfigError(
            f"task {task.task_id!r} is mapped over {', '.join(missing)}, which tasks test "
            "does not run: give the instance's arguments, e.g. --map-value "
            '\'{"name": "value"}\', or the list: --upstream-result '
            f"{missing[0]}='[...]' or --from-run RUN_ID"
        )
    decoded = {k: None if v is None else json.loads(v) for k, v in results.items()}
    try:
        items = map_items(task.mapping, resolve(task.mapping, params, decoded), limit=limit,
                          task_id=task.task_id)  # fmt: skip
    except MapError as exc:
        raise ConfigError(str(exc)) from None
    if not 0 <= index < len(items):
        raise ConfigError(
            f"task {task.task_id!r} maps into {len(items)} instance(s): --map-index "
            f"{index} is not one of them"
        )
    if isinstance(items[index], BadItem):  # its instance fails in a run, the others run
        raise ConfigError(items[index].error)
    return index, kwargs | items[index]


def upstream_of_run(
    store: Any, run_id: str, dag_id: str, task: Any
) -> tuple[Any, dict[str, str | None], list[str]]:
    """``--from-run``: the stored run, the JSON results of ``task``'s upstream tasks in
    it, and a note for each upstream task that has none (not succeeded there)."""
    if store is None:
        raise ConfigError("--from-run reads a stored run, but there is no database to read")
    run = store.get_run(run_id)  # NotFoundError names it
    if run.dag_id != dag_id:
        raise ConfigError(f"--from-run: run {run_id!r} is of DAG {run.dag_id!r}, not {dag_id!r}")
    ups = sorted(task.upstream_ids)
    results = store.results(run_id, ups)
    states = {t.task_id: t.state for t in store.task_instances(run_id) if t.task_id in ups}
    notes = [f"{u} ({states.get(u, 'missing')})" for u in ups if u not in results]
    return run, results, notes


def checked_params(dag: Any, given: dict) -> dict:
    """``--params`` over the DAG's params, each declared one checked against its schema
    (ParamValidationError naming the param and the rule; a required one must be given)."""
    try:
        return resolve_params(
            dag.params, dag.param_schemas, dag.required_params, given, strict=dag.strict_conf
        )
    except ValueError as exc:
        raise ParamValidationError(f"--params: DAG {dag.dag_id!r}: {exc}") from None


def run_task_test(
    settings: Settings,
    dag_id: str,
    task_id: str,
    logical_date: str | None,
    params: dict,
    store: object | None = None,
    map_index: int | None = None,
    map_value: dict | None = None,
    upstream_results: dict[str, str] | None = None,
    from_run: str | None = None,
) -> int:
    """Run ``task_id`` of ``dag_id`` here; its exit status (see the module docstring).
    ``upstream_results``: JSON text by upstream task id, over those of ``from_run``."""
    dag = find_dag(settings, dag_id)
    if task_id not in dag.tasks:
        raise NotFoundError(
            f"DAG {dag_id!r} has no task {task_id!r} (tasks: {', '.join(dag.tasks)})"
        )
    task = dag.tasks[task_id]
    results: dict[str, str | None] = {}
    notes: list[str] = []
    stored = None
    if from_run is not None:
        stored, results, notes = upstream_of_run(store, from_run, dag_id, task)
        params = {**stored.conf, **params}
    given, params = params, checked_params(dag, params)  # issue 25: typed params
    stray = sorted(set(upstream_results or {}) - task.upstream_ids)
    if stray:
        ups = ", ".join(sorted(task.upstream_ids)) or "none"
        raise ConfigError(
            f"--upstream-result: {stray[0]!r} is not an upstream task of {task_id!r} "
            f"(upstream: {ups})"
        )
    results.update(upstream_results or {})
    if stored is not None and logical_date is None:
        when = stored.logical_date
        interval = (stored.data_interval_start, stored.data_interval_end)
    else:
        when = parse_date(logical_date, dag.timezone)
        interval = dag.schedule.data_interval(when) if dag.schedule.kind != "none" else (when, when)
    logger = logging.getLogger(f"task.{dag_id}.{task_id}")
    logger.setLevel(logging.INFO)
    logger.handlers.clear()
    # what the try writes reaches the terminal masked, as it would reach its log
    masker = Masker()  # variables and connections come from the environment, store, backend
    terminal, own_terminal = _terminal()
    out = MaskedStream(terminal, masker)
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
    run_id = make_run_id(dag_id, "test", when)
    credentials = masked_source(chain_asker(SecretsChain(store, settings)), masker)
    index, kwargs = mapped_arguments(
        task, params, map_index, map_value, settings.max_map_length, results
    )
    mapped_over = tuple(task_sources(task.mapping)) if kwargs is not None else ()
    ctx = TaskContext(
        dag_id=dag_id,
        run_id=run_id,
        task_id=task_id,
        logical_date=when,
        data_interval_start=interval[0],
        data_interval_end=interval[1],
        try_number=1,
        params=params,
        idempotency_key=idempotency_key(dag_id, run_id, task_id, index),
        log=logger,
        upstream_ids=tuple(sorted(task.upstream_ids)),
        _results={k: v for k, v in results.items() if k not in mapped_over},
        mapped_over=mapped_over,
        credentials=credentials,
        outlets=tuple(o.uri for o in task.outlets),  # issue 15: ctx.outlet_event works
        map_index=index,
        timezone=dag.timezone,
        conf=given,  # {{ dag_run.conf }}: the run's conf (--from-run) and --params
        ask=tasks_test_asker(store, from_run, task_id, logger),  # ti.xcom_pull / push
        max_result_bytes=settings.max_result_bytes,
        mask_value=masker.mask_value,
    )
    if kwargs is not None:
        logger.info("map_index %s with %s", index, json.dumps(kwargs, default=str))
    if from_run is not None:
        given = ", ".join(sorted(results)) or "none"
        logger.info("upstream results from run %s: %s", from_run, given)
        if notes:
            logger.info("no result (not succeeded in that run): %s", ", ".join(notes))
    try:
        # issue 24 item 4: file descriptors 1 and 2 too (os.write, C code, subprocesses
        # the task starts), as a worker's task process captures them (fd_capture.py)
        with fds_into(out.write_bytes), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(out):  # fmt: skip
            return _run(task, ctx, dag, settings, logger, out, kwargs)
    finally:
        out.finish()
        if own_terminal:
            terminal.close()


def _terminal() -> tuple[Any, bool]:
    """Where a task test's masked output goes: a copy of this process's standard output
    file descriptor when sys.stdout is one (fd 1 becomes the capture pipe meanwhile),
    else sys.stdout itself (a test's capture object); (stream, whether it is our own)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.stdout, False
    if fd not in (1, 2):
        return sys.stdout, False
    sys.stdout.flush()
    copy = os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace")
    return copy, True


def _run(
    task: Any,
    ctx: TaskContext,
    dag: Any,
    settings: Settings,
    logger: logging.Logger,
    out: MaskedStream,
    kwargs: dict | None = None,
) -> int:
    """Run the task with its output going to ``out`` (the terminal, masked);
    ``kwargs``: a mapped instance's arguments."""
    task_id = task.task_id
    macros, filters = dag.user_defined_macros, dag.user_defined_filters  # issue 25
    if task.kind == "shell":
        mapped = resolve(kwargs or {}, ctx.upstream, ctx.task_id, ctx.params)  # partial(x=ref)
        variables = ctx.template_vars(dag.timezone) | macros | mapped
        shell = render_shell(task.command, variables, filters)
        logger.info("command: %s", shell.display)
        # as the worker's task process does (engine/runner.py): the task's env= (each
        # value rendered), the rendered values, then the ORCHESTRATOR_* variables
        task_env = render_env(task.env, variables, filters)
        env = {**os.environ, **task_env, **shell.env, **_orchestrator_env(ctx)}
        cwd = task.cwd or os.path.dirname(os.path.abspath(dag.fileloc))  # as a worker's
        proc = subprocess.Popen(
            [SHELLS[task.bash], "-c", shell.script], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, cwd=cwd,
        )  # fmt: skip
        assert proc.stdout is not None
        with proc.stdout:
            for chunk in iter(lambda: proc.stdout.read1(65536), b""):
                out.write_bytes(chunk)
        code = proc.wait()
        logger.info("exit status %s", code)
        if code != 0 and code == task.skip_on_exit_code:  # issue 14: a skip, not a failure
            logger.info("skipped: exit status %s is the task's skip_on_exit_code", code)
            return 0
        return 0 if code == 0 else 1
    if task.kind == "http":
        from orchestrator.engine.http_task import run_http

        outcome = run_http(
            task.http,
            ctx.template_vars(dag.timezone) | macros,
            logger,
            max_result_bytes=settings.max_result_bytes,
            response_check=task.response_check,
            ctx=ctx,
            filters=filters,
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
    if task.python_env:  # @task.virtualenv / external_python: in its own interpreter
        return _test_in_python_env(settings, dag, task, ctx, logger, out)
    try:  # issue 25: a TaskFlow call's references resolved, the context by name
        if group_of(task.mapping) is not None:  # issue 25 item 7
            value = invoke(task, ctx, None, _takes_argument, kwargs)  # the group's item
        else:
            value = invoke(task, ctx, kwargs, _takes_argument)
        wrong = output_error(task, value)  # multiple_outputs needs a dict
        if wrong is not None:
            logger.error("failed: %s", wrong)
            return 1
    except Skip as exc:  # issue 14: the task skipped itself
        logger.info("skipped: %s", exc)
        return 0
    except Fail as exc:
        logger.error("failed: Fail raised: %s (no retry)", exc)
        return 1
    except Exception:
        logger.exception("task %s failed", task_id)
        return 1
    print(json.dumps(value, default=str))
    return 0


def _orchestrator_env(ctx: TaskContext) -> dict[str, str]:
    return {
        "ORCHESTRATOR_DAG_ID": ctx.dag_id,
        "ORCHESTRATOR_RUN_ID": ctx.run_id,
        "ORCHESTRATOR_TASK_ID": ctx.task_id,
        "ORCHESTRATOR_TRY_NUMBER": str(ctx.try_number),
        "ORCHESTRATOR_IDEMPOTENCY_KEY": ctx.idempotency_key,
        "ORCHESTRATOR_MAP_INDEX": str(ctx.map_index),
    }


class _Terminal:
    """The try's log of a task test: the masked terminal stream."""

    def __init__(self, out: MaskedStream) -> None:
        self.out = out

    def write_bytes(self, data: bytes) -> None:
        self.out.write_bytes(data)

    def end_of_output(self) -> None:
        self.out.flush()


def _test_in_python_env(
    settings: Settings, dag, task, ctx: TaskContext, logger, out: MaskedStream
) -> int:
    from orchestrator.engine.runner import _run_command
    from orchestrator.engine.virtualenv_task import run_in_python_env

    job = {
        "timezone": dag.timezone,
        "results": dict(ctx._results),
        "env": render_env(
            task.env,
            ctx.template_vars(dag.timezone) | dag.user_defined_macros,
            dag.user_defined_filters,
        ),
        "cwd": os.path.dirname(os.path.abspath(dag.fileloc)) if dag.fileloc else None,
        "venv_cache_dir": settings.venv_cache_dir,
        "venv_installer": settings.venv_installer,
        "max_result_bytes": settings.max_result_bytes,
    }
    outcome = run_in_python_env(task, job, ctx, _Terminal(out), logger, _run_command)
    if not outcome["ok"]:
        return 1
    print(outcome["result"] if outcome["result"] is not None else "null")
    return 0
