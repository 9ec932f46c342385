"""What the adapters of :mod:`orchestrator.airflow` do inside a try (in the task
process): call an Airflow-style callable with its context, render its templated
arguments, run a ``@task.bash`` command, find a task's direct downstream tasks.

    >>> call_with_context(lambda ds, x: (ds, x), (), {"x": 1}, {"ds": "2026-01-01"})
    ('2026-01-01', 1)
"""

from __future__ import annotations

import inspect
import os
import subprocess
from collections.abc import Mapping
from typing import Any

from orchestrator.airflow.exceptions import AirflowException
from orchestrator.authoring.context_names import context_values, current_try
from orchestrator.authoring.http_request import render_url_part
from orchestrator.authoring.templating import render_shell, render_text
from orchestrator.authoring.xcom_arg import resolve
from orchestrator.errors import Skip


def running() -> tuple[Any, Any]:
    """(TaskContext, task) of the try running now; RuntimeError outside one."""
    found = current_try()
    if found is None:
        raise RuntimeError("this runs inside a task's try only")
    return found


def direct_downstream(task: Any) -> list[str]:
    """The ids of ``task``'s direct downstream tasks (its DAG validated)."""
    return sorted(t.task_id for t in task.dag.tasks.values() if task.task_id in t.upstream_ids)


def call_with_context(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], context: Mapping[str, Any]
) -> Any:
    """``fn(*args, **kwargs)`` plus the context names ``fn`` takes (all of them for a
    ``**kwargs``), as Airflow's PythonOperator calls its ``python_callable``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    given = dict(kwargs)
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][
        : len(args)
    ]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        extra = {k: v for k, v in context.items() if k not in given and k not in positional}
    else:
        names = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
        extra = {
            k: v for k, v in context.items() if k in names and k not in given
            and k not in positional
        }  # fmt: skip
    return fn(*args, **given, **extra)


def render_value(value: Any, variables: dict[str, Any], filters: Any, what: str) -> Any:
    """``value`` with every string in it rendered as a template (lists, tuples, dicts)."""
    if isinstance(value, str):
        return render_text(value, variables, filters, what) if "{" in value else value
    if isinstance(value, list):
        return [render_value(v, variables, filters, what) for v in value]
    if isinstance(value, tuple):
        return tuple(render_value(v, variables, filters, what) for v in value)
    if isinstance(value, dict):
        return {k: render_value(v, variables, filters, what) for k, v in value.items()}
    return value


def resolved(value: Any) -> Any:
    """``value`` with its references to upstream results (``other.output``) resolved."""
    ctx, task = running()
    return resolve(value, ctx.upstream, task.task_id, ctx.params)


def rendered(value: Any, what: str) -> Any:
    """``value`` resolved and its strings rendered with the try's template variables."""
    ctx, task = running()
    variables = ctx.template_vars(ctx.timezone) | dict(task.dag.user_defined_macros)
    return render_value(resolved(value), variables, task.dag.user_defined_filters, what)


def rendered_url(value: str | None) -> str | None:
    """An endpoint rendered with the try's variables, each value percent-encoded (a
    value can change a path segment's or a query value's text, never the structure)."""
    if value is None:
        return None
    ctx, task = running()
    variables = ctx.template_vars(ctx.timezone) | dict(task.dag.user_defined_macros)
    return render_url_part(value, variables, task.dag.user_defined_filters)


def context_dict() -> dict[str, Any]:
    """The running try's Airflow context dict."""
    ctx, task = running()
    return context_values(ctx, task)


def run_bash(
    command: Any,
    *,
    env: dict[str, str] | None = None,
    append_env: bool = False,
    cwd: str | None = None,
    skip_on_exit_code: int | list[int] | None = 99,
) -> str | None:
    """Run ``command`` (a template: its values go in the environment, never into the
    script's text) with ``bash -c``; its last line of output is the result. An exit
    status in ``skip_on_exit_code`` skips the task, any other non-zero one fails it."""
    if not isinstance(command, str) or not command.strip():
        raise ValueError(f"@task.bash must return a non-empty command, got {command!r}")
    ctx, task = running()
    variables = ctx.template_vars(ctx.timezone) | dict(task.dag.user_defined_macros)
    shell = render_shell(command, variables, task.dag.user_defined_filters)
    base = dict(os.environ) if env is None or append_env else {}
    full = {**base, **(env or {}), **shell.env}
    ctx.log.info("command: %s", shell.display)
    proc = subprocess.Popen(
        ["bash", "-c", shell.script],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=full,
        cwd=cwd,
        text=True,
        errors="backslashreplace",
    )
    last = None
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="")
        last = line.rstrip("\n")
    code = proc.wait()
    skips = [skip_on_exit_code] if isinstance(skip_on_exit_code, int) else skip_on_exit_code
    if code != 0 and code in (skips or []):
        raise Skip(f"command exited with status {code}")
    if code != 0:
        raise AirflowException(f"bash command exited with status {code}")
    return last
