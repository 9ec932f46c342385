"""Calling a task inside a DAG builds the graph (issue 25, Airflow's TaskFlow style).

What a DAG file writes::

    with DAG("etl", schedule=None) as dag:
        @task
        def extract():
            return [1, 2, 3]

        @task(multiple_outputs=True)
        def summarize(rows):
            return {"total": sum(rows), "count": len(rows)}

        @task
        def report(total):
            print(total)

        report(summarize(extract())["total"])   # extract >> summarize >> report

A call made while a DAG file is being built (inside ``with DAG(...)``, or while the
loader imports the file) never runs the function: it binds the arguments to the task,
adds an edge from every task whose result they reference, and returns an
:class:`~orchestrator.authoring.xcom_arg.XComArg`. The first call binds the task
itself; a second call of the same task makes a copy with the id ``t__1`` (``t__2``...),
as Airflow does. A call inside a task group makes the task there (``group.t``); a task
defined outside every group and only called inside groups is dropped as a template
when the DAG is validated. Outside any DAG, calling a task calls its function.

At run time :func:`invoke` calls the function with its arguments' references
replaced by the upstream results. A first parameter named ``ctx`` receives the task
context, as it does in the ``ctx`` style. This module does not import ``task_node.py``;
it works on the task it is given.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Mapping
from typing import Any

from orchestrator.authoring.building import _active, _current_group, _loading
from orchestrator.authoring.context_names import CONTEXT_NAMES, RUNNING, context_values
from orchestrator.authoring.where import Where
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.authoring.xcom_arg import (
    MARKER,
    XComArg,
    check_same_dag,
    mapped_arguments,
    resolve,
    spec_form,
)
from orchestrator.scheduling.mapping import group_of

CONTEXT_PARAMETER = "ctx"  # a first parameter of this name receives the task context


def building() -> bool:
    """Is a DAG file being built now (a call builds the graph) rather than run?"""
    return bool(_active) or bool(_loading)


def call(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any], where: Where) -> XComArg:
    """``task(*args, **kwargs)`` while a DAG is built: bind, wire, return the reference."""
    if task.fn is None:
        raise _fail(
            f"{task.kind} task {task.task_id!r} cannot be called: only Python tasks take "
            f"arguments; wire it with >> instead",
            where,
        )
    if _active and task.dag not in _active:
        raise _fail(
            f"task {task.task_id!r} of DAG {task.dag.dag_id!r} is called inside DAG "
            f"{_active[-1].dag_id!r}: call a task inside its own DAG's 'with' block",
            where,
        )
    target = task if _may_bind(task) else copy_of(task, where)
    bind(target, args, kwargs, where)
    return XComArg(target)


def _may_bind(task: Any) -> bool:
    group = _current_group(task.dag)
    here = group.path if group is not None else None
    return not task.called and task.mapping is None and task.group == here


def copy_of(task: Any, where: Where) -> Any:
    """A new task like ``task`` in the current group, with the next free id ``t__n``."""
    task.copied = True
    group = _current_group(task.dag)
    taken = set(task.dag.tasks) | set(task.dag.task_groups)

    def full(name: str) -> str:
        return group.child_id(name) if group is not None else name

    name, n = task.base_id, 0
    while full(name) in taken:
        n += 1
        name = f"{task.base_id}__{n}"
    made = type(task)(task.dag, name, fn=task.fn, where=where, **task.options)
    made.is_setup, made.is_teardown = task.is_setup, task.is_teardown
    made.on_failure_fail_dagrun = task.on_failure_fail_dagrun
    return made


def bind(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any], where: Where) -> None:
    """Check the call against the function's signature, store it, add the edges."""
    refs = check_same_dag(task, (args, kwargs), where)
    for arg in mapped_arguments((args, kwargs)):  # issue 25 item 7
        if task.group != arg.group and not (task.group or "").startswith(arg.group + "."):
            raise _fail(
                f"task {task.task_id!r} is given {arg._name()}, an argument of mapped task "
                f"group {arg.group!r}, outside that group: only the group's tasks get its "
                "items (downstream, take the result of a task of the group)",
                where,
            )
    ctx_first = False
    try:
        signature = inspect.signature(task.fn)
    except (TypeError, ValueError):
        signature = None  # a builtin: nothing to check
    if signature is not None:
        params = list(signature.parameters.values())
        ctx_first = bool(params) and _is_context(params[0])
        try:
            bound = signature.bind_partial(*((None,) if ctx_first else ()), *args, **kwargs)
        except TypeError as exc:
            raise _fail(
                f"task {task.task_id!r}: the call does not fit def {task.fn.__name__}"
                f"{signature}: {exc}",
                where,
            ) from None
        missing = [
            p.name
            for p in params[1 if ctx_first else 0 :]
            if p.name not in bound.arguments
            and p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            and p.name not in CONTEXT_NAMES  # issue 25 item 2: given by name in the try
        ]
        if missing:
            raise _fail(
                f"task {task.task_id!r}: {task.fn.__name__}() needs "
                f"{', '.join(map(repr, missing))}, which the call does not give "
                f"(write {task.fn.__name__}({', '.join(missing)}=...))",
                where,
            )
    task.called = True
    task.bound_names = frozenset(bound.arguments) if signature is not None else frozenset()
    task.call_args, task.call_kwargs = tuple(args), dict(kwargs)
    task.ctx_first = ctx_first
    for ref in refs:
        task.upstream_ids.add(ref.task.task_id)


def _is_context(param: inspect.Parameter) -> bool:
    return param.name == CONTEXT_PARAMETER and param.kind in (
        param.POSITIONAL_ONLY,
        param.POSITIONAL_OR_KEYWORD,
    )


def check_parameters(dag: Any) -> None:
    """Plan how each Python task's function is called (issue 25 item 2): which
    parameters get context values by name, whether ``**kwargs`` gets the context, and
    refuse, at the task's file:line, a parameter that nothing gives."""
    for task in dag.tasks.values():
        if task.kind == "python" and task.fn is not None and not task.python_env:
            _plan(task)


@functools.lru_cache(maxsize=4096)
def _signature(fn: Any) -> inspect.Signature | None:
    """The function's signature, once per function (1,000 tasks often share one)."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None  # a builtin: called as before


def _plan(task: Any) -> None:
    signature = _signature(task.fn)
    if signature is None:
        return
    params = list(signature.parameters.values())
    given = set(task.bound_names)
    mapping = task.mapping
    if group_of(mapping) is not None:  # its group's items are not its arguments
        mapping = None
    if mapping is not None:
        given |= set(mapping.get("partial") or {})
        given |= {str(name) for name, _ in mapping["args"] if mapping["kind"] == "expand"}
    first = params[0] if params else None
    if task.ctx_first is None:  # the ctx style: a first parameter gets the TaskContext
        task.ctx_first = first is not None and (
            first.kind is first.VAR_POSITIONAL
            or (
                first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
                and first.name not in CONTEXT_NAMES
            )
        )
    rest = params[1:] if task.ctx_first and first.kind is not first.VAR_POSITIONAL else params
    names, unknown, var_kw = [], [], False
    for p in rest:
        if p.kind is p.VAR_KEYWORD:
            var_kw = not task.ctx_first  # def f(ctx, **kw) keeps its own keywords
        elif p.kind is p.VAR_POSITIONAL or p.name in given:
            continue
        elif p.name in CONTEXT_NAMES and p.kind is not p.POSITIONAL_ONLY:
            names.append(p.name)
        elif p.default is p.empty:
            unknown.append(p.name)
    if unknown and not (mapping is not None and mapping["kind"] == "expand_kwargs"):
        raise _fail(
            f"task {task.task_id!r}: def {task.fn.__name__}{signature}: parameter "
            f"{unknown[0]!r} is neither an argument (of a call, partial() or expand()) nor "
            f"a context name (ctx first, or by name: {', '.join(sorted(CONTEXT_NAMES))})",
            (task.fileloc, task.lineno),
        )
    task.context_names = tuple(names)
    task.context_var_kw = var_kw
    task.param_names = frozenset(p.name for p in params)


def drop_templates(dag: Any) -> None:
    """Drop the tasks that were only copied from (every call made a copy in a task
    group) and are wired to nothing: they were templates, never meant to run."""
    downstream_of = {up for t in dag.tasks.values() for up in t.upstream_ids}
    downstream_of |= {name for edge in dag._pending for name in edge[:2]}
    for task_id, t in list(dag.tasks.items()):
        if (
            getattr(t, "copied", False)
            and not t.called
            and t.mapping is None
            and not t.upstream_ids
            and task_id not in downstream_of
            and not (t.is_setup or t.is_teardown)
        ):
            del dag.tasks[task_id]


def spec_fields(task: Any) -> dict[str, Any]:
    """A task's call and multiple_outputs in its spec, only when used (so a DAG in the
    ctx style keeps its version hash): a changed argument makes a new version."""
    out: dict[str, Any] = {}
    if task.called:
        out["call"] = {"args": spec_form(task.call_args), "kwargs": spec_form(task.call_kwargs)}
    if task.multiple_outputs:
        out["multiple_outputs"] = True
    if task.owner:
        out["owner"] = task.owner
    keys = result_keys(task)
    if keys:
        out["result_keys"] = keys
    return out


def result_keys(task: Any) -> dict[str, list[str]]:
    """The upstream tasks this task reads only some keys of (``summary["total"]``), and
    those keys: the worker sends the try just them, not the whole dict. Only for a task
    that cannot read an upstream result any other way (no ctx, ti, **context or
    in-process hooks), so the smaller result is invisible to it."""
    if task.kind != "python" or task.ctx_first or task.context_var_kw or task.python_env:
        return {}
    if {"ti", "task_instance"} & set(task.context_names) or task.callbacks.keys() & {
        "on_execute",
        "on_success",
    }:
        return {}
    used: dict[str, set[str] | None] = {}  # None: the whole result is used
    forms = [spec_form((task.call_args, task.call_kwargs))]
    if task.mapping is not None:
        forms.append(task.mapping.get("partial") or {})
    for ref in _markers(forms):
        up, keys = ref[MARKER], ref.get("key") or []
        if not keys or used.get(up, set()) is None:
            used[up] = None
        else:
            used.setdefault(up, set()).add(keys[0])  # type: ignore[union-attr]
    return {up: sorted(keys) for up, keys in sorted(used.items()) if keys}


def _markers(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        if MARKER in value:
            return [value]
        return [m for v in value.values() for m in _markers(v)]
    if isinstance(value, list | tuple):
        return [m for v in value for m in _markers(v)]
    return []


# -- multiple_outputs ------------------------------------------------------------------
def infer_multiple_outputs(fn: Any) -> bool:
    """Airflow's rule: a function annotated ``-> dict`` (``dict[str, int]``,
    ``typing.Dict[...]``) has multiple outputs."""
    if "return" not in (getattr(fn, "__annotations__", None) or {}):
        return False  # the common case, without evaluating any annotation
    try:
        returns = typing.get_type_hints(fn).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not evaluate
        returns = getattr(fn, "__annotations__", {}).get("return")
    if isinstance(returns, str):
        return returns.replace("typing.", "").startswith(("dict", "Dict"))
    return returns is dict or typing.get_origin(returns) is dict


def output_error(task: Any, value: Any) -> str | None:
    """Why ``value`` cannot be the result of a ``multiple_outputs`` task (None: it can)."""
    if not task.multiple_outputs or value is None:
        return None
    if not isinstance(value, Mapping):
        return (
            f"task {task.task_id!r} has multiple_outputs (multiple_outputs=True or a "
            f"-> dict return annotation) but returned {type(value).__name__}, not a dict: "
            "return a dict with string keys, or set multiple_outputs=False"
        )
    for key in value:
        if not isinstance(key, str):
            return (
                f"task {task.task_id!r} has multiple_outputs but its result's key {key!r} "
                f"is {type(key).__name__}, not a string: every key is one output's name"
            )
    return None


# -- run time ------------------------------------------------------------------------------
def invoke(
    task: Any,
    ctx: Any,
    map_kwargs: dict[str, Any] | None,
    takes_argument: Any,
    item: dict[str, Any] | None = None,
) -> Any:
    """Call ``task``'s function for one try: its call's arguments and a mapped
    instance's arguments with every reference replaced by the upstream result, and
    every mapped task group argument by its value in the group instance's ``item``."""
    cache: dict[str, Any] = {}

    def result_of(upstream: str) -> Any:
        if upstream not in cache:
            cache[upstream] = ctx.upstream(upstream)
        return cache[upstream]

    args = resolve(task.call_args, result_of, task.task_id, ctx.params, item)
    kwargs = resolve(task.call_kwargs, result_of, task.task_id, ctx.params, item)
    mapped = map_kwargs is not None
    if mapped:
        kwargs.update(resolve(map_kwargs, result_of, task.task_id, ctx.params))
    if task.context_names or task.context_var_kw:  # issue 25 item 2: by name
        values = context_values(ctx, task)
        for name in task.context_names:
            kwargs.setdefault(name, values[name])
        if task.context_var_kw:  # **context: every name no parameter takes
            for name, value in values.items():
                if name not in kwargs and name not in task.param_names:
                    kwargs[name] = value
    ctx_first = task.ctx_first
    if ctx_first is None:  # the ctx style: the context to a function that takes one
        ctx_first = mapped or takes_argument(task.fn)
    token = RUNNING.set((ctx, task))  # issue 26: get_current_context() inside the call
    try:
        return task.fn(ctx, *args, **kwargs) if ctx_first else task.fn(*args, **kwargs)
    finally:
        RUNNING.reset(token)
