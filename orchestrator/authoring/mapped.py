"""Declaring mapped tasks: ``.partial(...)``, ``.expand(...)``, ``.expand_kwargs(...)``.

What a DAG file writes::

    load.partial(bucket="raw").expand(path=list_files) >> total
    load.expand(path=["a.csv", "b.csv"], n=dag.param("n"))     # a cross product
    load.expand_kwargs(list_pairs)                               # one item per dict

Each source is an upstream task (its JSON result must be a list; a mapped task's
results are collected into one list), a literal list, or a DAG param (``dag.param``).
Every mistake is a :class:`DagDefinitionError` naming the DAG file and line of the
call. The stored form (``Task.mapping``, in the DAG spec) is read by
:mod:`orchestrator.scheduling.mapping`. This module does not import ``dag.py``; it
works on the task object it is given.
"""

from __future__ import annotations

import inspect
import json
import keyword
from typing import Any

from orchestrator.authoring.context_names import CONTEXT_NAMES
from orchestrator.authoring.template_context import TEMPLATE_NAMES
from orchestrator.authoring.where import Where
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.authoring.xcom_arg import ParamRef, XComArg, check_same_dag, spec_form
from orchestrator.scheduling.mapping import KWARGS

# template variables of a shell command that a mapped argument may not shadow
SHELL_RESERVED = TEMPLATE_NAMES


class Partial:
    """``task.partial(a=1)``: the task with some arguments fixed, waiting for ``expand``."""

    def __init__(self, task: Any, fixed: dict[str, Any], where: Where) -> None:
        self._task = task
        self._fixed = fixed
        self._where = where

    def expand(self, **sources: Any) -> Any:
        """Map the task over ``sources`` with the fixed arguments; returns the task."""
        return declare(self._task, "expand", sources, self._fixed, _caller())

    def expand_kwargs(self, source: Any) -> Any:
        """Map the task over a list of dicts with the fixed arguments; returns the task."""
        return declare(self._task, "expand_kwargs", {KWARGS: source}, self._fixed, _caller())

    def __repr__(self) -> str:
        return f"<Partial {self._task.task_id} {sorted(self._fixed)}>"


def check_partial(task: Any, fixed: dict[str, Any], where: Where) -> dict[str, Any]:
    _check_mappable(task, where)
    # issue 25: a reference (partial(rows=extract())) is an edge; stored in its JSON form,
    # resolved in the task process (authoring/xcom_arg.py)
    for ref in check_same_dag(task, fixed, where):
        task.upstream_ids.add(ref.task.task_id)
    fixed = spec_form(fixed, strict=True)
    try:
        json.dumps(fixed)
    except (TypeError, ValueError) as exc:
        raise _fail(
            f"task {task.task_id!r}: partial() values must be JSON-serialisable: {exc}", where
        ) from None
    return dict(fixed)


def declare(
    task: Any, kind: str, sources: dict[str, Any], fixed: dict[str, Any], where: Where
) -> Any:
    """Make ``task`` a mapped task over ``sources``; returns the task (for ``>>``)."""
    name = task.task_id
    _check_mappable(task, where)
    if task.mapping is not None:
        raise _fail(f"task {name!r} is mapped already (expand called twice)", where)
    if not sources:
        raise _fail(f"task {name!r}: expand() needs at least one argument to map over", where)
    both = sorted(set(sources) & set(fixed))
    if both:
        raise _fail(
            f"task {name!r}: {', '.join(map(repr, both))} is given to both partial() and "
            "expand(); an argument is either fixed or mapped",
            where,
        )
    args: list[list[Any]] = []
    upstream: list[Any] = []
    for arg, source in sources.items():
        ref, up = _ref(task, arg, source, kind, where)
        args.append([arg, ref])
        if up is not None:
            upstream.append(up)
    names = list(fixed) + ([] if kind == "expand_kwargs" else list(sources))
    _check_arguments(task, names, kind, where)
    task.mapping = {"kind": kind, "args": args, "partial": dict(fixed)}
    for up in upstream:
        task.upstream_ids.add(up.task_id)
    return task


def _check_mappable(task: Any, where: Where) -> None:
    if task.kind not in ("python", "shell"):
        raise _fail(
            f"task {task.task_id!r}: only Python and shell tasks can be mapped, "
            f"not {task.kind} tasks",
            where,
        )
    if task.branch:
        raise _fail(f"task {task.task_id!r}: a branch task cannot be mapped", where)


def _ref(task: Any, arg: str, source: Any, kind: str, where: Where) -> tuple[dict, Any]:
    return source_ref(f"task {task.task_id!r}", task.dag, arg, source, kind, where, task)


def source_ref(
    name: str, dag: Any, arg: str, source: Any, kind: str, where: Where, itself: Any = None
) -> tuple[dict, Any]:
    """The stored form of one source of ``expand(arg=source)`` of ``name`` (a task or a
    mapped task group, issue 25 item 7) and the upstream task it makes (or None)."""
    if isinstance(source, ParamRef):
        if source.name not in dag.params:
            declared = ", ".join(sorted(dag.params)) or "none"
            raise _fail(
                f"{name}: expand over param {source.name!r}, which DAG "
                f"{dag.dag_id!r} does not declare (params: {declared})",
                where,
            )
        return {"param": source.name}, None
    if isinstance(source, list | tuple):
        values = list(source)
        try:
            json.dumps(values)
        except (TypeError, ValueError) as exc:
            raise _fail(
                f"{name}: the literal list of {arg!r} must be JSON-serialisable: {exc}",
                where,
            ) from None
        return {"literal": values}, None
    keys: tuple[str, ...] = ()
    if isinstance(source, XComArg):  # issue 25: expand(x=extract()) or x=extract()["key"]
        source, keys = source.task, source.keys
    if hasattr(source, "task_id") and hasattr(source, "upstream_ids") and hasattr(source, "dag"):
        if source.dag is not dag:
            raise _fail(
                f"{name}: cannot expand over task {source.task_id!r} of DAG {source.dag.dag_id!r}",
                where,
            )
        if source is itself:
            raise _fail(f"{name} cannot be expanded over its own result", where)
        return ({"task": source.task_id} | ({"key": list(keys)} if keys else {})), source
    what = "expand_kwargs()" if kind == "expand_kwargs" else f"expand({arg}=...)"
    raise _fail(
        f"{name}: {what} needs an upstream task, a list or dag.param(...), "
        f"got {type(source).__name__} {repr(source)[:60]}",
        where,
    )


def _check_arguments(task: Any, names: list[str], kind: str, where: Where) -> None:
    """Do the fixed and mapped argument names fit the task? (For expand_kwargs only the
    fixed ones are known before the run.)"""
    name = task.task_id
    if task.kind == "shell":
        for arg in names:
            if not arg.isidentifier() or keyword.iskeyword(arg) or arg in SHELL_RESERVED:
                raise _fail(
                    f"task {name!r}: {arg!r} cannot be a mapped argument of a shell command "
                    "(it must be a name that is not a template variable already)",
                    where,
                )
        return
    try:
        signature = inspect.signature(task.fn)
    except (TypeError, ValueError):
        return  # a builtin or C function: nothing to check
    params = list(signature.parameters.values())
    # the context goes to a first positional parameter named ctx, or (the ctx style of
    # expand) one that no argument fills; issue 25: def add(x) maps without a context
    first = params[0] if params else None
    task.ctx_first = first is not None and (
        first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
        and (
            first.name == "ctx"
            or (kind == "expand" and first.name not in names and first.name not in CONTEXT_NAMES)
        )
    )
    rest = params[1:] if task.ctx_first else params
    takes_any = any(p.kind is p.VAR_KEYWORD for p in rest)
    accepted = {p.name for p in rest if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = [arg for arg in names if arg not in accepted and not takes_any]
    if unknown:
        raise _fail(
            f"task {name!r}: {task.fn.__name__}() does not take the argument "
            f"{', '.join(map(repr, unknown))} (it takes: {', '.join(sorted(accepted)) or 'none'})",
            where,
        )
    if kind == "expand_kwargs":
        return
    missing = [
        p.name
        for p in rest
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in names
        and p.name not in CONTEXT_NAMES  # given by name in the try (issue 25)
    ]
    if missing:
        raise _fail(
            f"task {name!r}: {task.fn.__name__}() needs {', '.join(map(repr, missing))}, "
            "which neither partial() nor expand() gives",
            where,
        )
