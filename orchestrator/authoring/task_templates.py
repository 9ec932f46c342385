"""Every template of a task, and their check when the DAG is validated (issue 25).

A task's templates: a shell command and its ``env=`` values, an HTTP task's URL,
header values and body, a file sensor's ``filepath`` and a ``trigger_dag`` task's
``conf`` strings. :func:`check_dag_templates` checks each with
:func:`~orchestrator.authoring.template_check.check_names` and marks the tasks whose
templates use the DAG's ``user_defined_macros`` / ``user_defined_filters``
(``Task.user_templates``): only their tries import the DAG file to render them.

>>> list(templates_of_json("json", {"a": ["{{ ds }}", 1]}))
[("json['a'][0]", '{{ ds }}')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from orchestrator.authoring.template_check import Names, check_names
from orchestrator.authoring.template_files import (
    TemplateFileError,
    is_template_file,
    read_template_file,
    search_path,
)
from orchestrator.authoring.templating import TemplateRenderError, check_template
from orchestrator.authoring.where import Where
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.scheduling.mapping import KWARGS

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def template_file(dag: Any, task_id: str, value: str, where: Where) -> tuple[str, str | None]:
    """(template text, display path of its file or None) of a command or env value."""
    if not is_template_file(value):
        return value, None
    folders = search_path(dag.fileloc, dag.template_searchpath)
    try:
        return read_template_file(value, folders)
    except TemplateFileError as exc:
        raise _fail(f"task {task_id!r}: {exc}", where) from None


def env_option(
    dag: Any, task_id: str, env: Any, where: Where
) -> tuple[dict[str, str], dict[str, str]]:
    """A task's ``env=`` checked (names, string values, templates that are text):
    (env with template files read, key -> template file path)."""
    if env is None:
        return {}, {}
    if not isinstance(env, dict):
        raise _fail(f"task {task_id!r}: env must be a dict, got {type(env).__name__}", where)
    out, files = {}, {}
    for key, value in env.items():
        if not isinstance(key, str) or not ENV_NAME.fullmatch(key):
            raise _fail(
                f"task {task_id!r}: env: {key!r} is not an environment variable name "
                "(letters, digits and '_', not starting with a digit)",
                where,
            )
        if not isinstance(value, str):
            raise _fail(
                f"task {task_id!r}: env[{key!r}] must be a string (a template), got "
                f"{type(value).__name__}",
                where,
            )
        if "\x00" in value:
            raise _fail(f"task {task_id!r}: env[{key!r}] contains a NUL byte", where)
        text, path = template_file(dag, task_id, value, where)
        out[key] = text
        if path is not None:
            files[key] = path
    return out, files


def templates_of_json(what: str, value: Any) -> Iterator[tuple[str, str]]:
    """(label, template) of every string inside a JSON-like ``value``."""
    if isinstance(value, str):
        yield what, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from templates_of_json(f"{what}[{k!r}]", v)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from templates_of_json(f"{what}[{i}]", v)


def templates_of(task: Any) -> Iterator[tuple[str, str, str | None]]:
    """(label, template, template file or None) of each template of ``task``."""
    if task.kind == "shell" and task.command is not None:
        yield "the command", task.command, task.command_file
    if task.kind == "shell" or task.python_env:
        for key, value in task.env.items():
            yield f"env[{key!r}]", value, task.env_files.get(key)
    if task.http is not None:
        yield "url", task.http["url"], None
        for name, value in task.http["headers"].items():
            yield f"headers[{name!r}]", value, None
        data = task.http.get("data")
        if task.http.get("json") is not None:
            for label, text in templates_of_json("json", task.http["json"]):
                yield label, text, None
        elif data is not None:
            for label, text in templates_of_json("data", data):
                yield label, text, None
    check = task.check or {}
    if check.get("type") == "file":
        yield "filepath", check["filepath"], None
    elif check.get("type") == "trigger":
        for label, text in templates_of_json("conf", check.get("conf") or {}):
            yield label, text, None


def _names(dag: Any, task: Any) -> Names:
    macros = frozenset(dag.user_defined_macros)
    filters = frozenset(dag.user_defined_filters)
    if task.check is not None:  # the worker renders it: no user code there
        return Names(params=set(dag.params), unavailable=macros | filters)
    extra: set[str] = set()
    open_variables = False
    if task.kind == "shell" and task.mapping is not None:
        extra.update(task.mapping.get("partial") or {})
        for arg, _ in task.mapping["args"]:
            if arg == KWARGS:
                open_variables = True  # expand_kwargs: the keys are known at run time
            else:
                extra.add(arg)
    return Names(
        params=set(dag.params),
        macros=macros,
        filters=filters,
        extra=frozenset(extra),
        open_variables=open_variables,
    )


def check_dag_templates(dag: Any) -> None:
    """Check every template of every task of ``dag`` (an import error naming the task's
    line, the template and the unknown name); set each task's ``user_templates``."""
    for task in dag.tasks.values():
        names = _names(dag, task)
        for label, source, path in templates_of(task):
            try:
                check_names(source, names, path)
            except TemplateRenderError as exc:
                shown = f"{label} ({path})" if path else label
                raise _fail(
                    f"task {task.task_id!r}: {shown}: {exc}", (task.fileloc, task.lineno)
                ) from None
        task.user_templates = bool(names.used)


def check_shell_command(task_id: str, command: str, path: str | None, where: Where) -> None:
    """The shell-context check of a command (:func:`check_template`), naming its file."""
    try:
        check_template(command)
    except TemplateRenderError as exc:
        shown = f" ({path})" if path else ""
        raise _fail(f"task {task_id!r}{shown}: {exc}", where) from None
