"""Mapped task groups (issue 25 item 7): ``@task_group`` functions expanded over lists.

What a DAG file writes (Airflow's shape)::

    @task_group
    def per_file(path):
        return load(clean(path))                 # clean[i] >> load[i] for each item i

    total(per_file.expand(path=list_files()))    # total gets load's results as a list
    per_file.partial(bucket="raw").expand(path=["a.csv", "b.csv"])
    per_file.expand_kwargs([{"path": "a.csv"}, {"path": "b.csv"}])

The function runs once, at parse time, with a :class:`MappedArgument` for each mapped
argument (fixed ones as they are). Every task it creates becomes a mapped task over the
group's sources, with ``mapping["group"]`` naming the group: the store expands all of
them together into one instance per item (:mod:`orchestrator.store.tasks.expansion`),
and inside the group instance ``i`` of a task waits for instance ``i`` of its upstream
tasks of the group only, with its trigger rule read per instance. Tasks downstream of
the group see its tasks as mapped ones (all instances, results collected in map
order). This module does not import ``dag.py``; it works on the objects it is given.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from orchestrator.authoring.building import _active, _current_group
from orchestrator.authoring.mapped import source_ref
from orchestrator.authoring.where import Where
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.authoring.xcom_arg import MappedArgument


def mapped_group(
    make_group: Callable[[Any], Any],
    func: Callable[..., Any],
    kind: str,
    sources: dict[str, Any],
    fixed: dict[str, Any],
    where: Where,
) -> Any:
    """Build the mapped group of ``func`` (``make_group(dag)`` opens the TaskGroup);
    returns what the function returns, or the group when it returns None."""
    dag = _active[-1] if _active else None
    title = f"mapped task group {func.__name__!r}"
    if dag is None:
        raise _fail(f"{title} is expanded outside a DAG: use 'with DAG(...):'", where)
    outer = _current_group(dag)
    while outer is not None:
        if getattr(outer, "mapping", None) is not None:
            raise _fail(
                f"{title} is expanded inside mapped task group {outer.path!r}: a mapped "
                "group cannot be nested in another (expand the outer group over the "
                "combined items instead)",
                where,
            )
        outer = outer.parent
    if not sources:
        raise _fail(f"{title}: expand() needs at least one argument to map over", where)
    both = sorted(set(sources) & set(fixed))
    if both:
        raise _fail(
            f"{title}: {', '.join(map(repr, both))} is given to both partial() and expand()",
            where,
        )
    args: list[list[Any]] = []
    upstream: list[Any] = []
    for arg, source in sources.items():
        ref, up = source_ref(title, dag, arg, source, kind, where)
        args.append([arg, ref])
        if up is not None:
            upstream.append(up)
    names = _mapped_names(func, kind, list(sources), fixed, title, where)
    with make_group(dag) as group:
        group.mapping = {"kind": kind, "args": args}
        value = func(**fixed, **{n: MappedArgument(group.path, n) for n in names})
    if isinstance(value, MappedArgument):
        raise _fail(
            f"{title} returns its argument {value._name()}: return a task's result "
            "(the tasks downstream of the group get the results of every instance)",
            where,
        )
    tasks = group.tasks
    if not tasks:
        raise _fail(f"{title} creates no task: a mapped group needs at least one", where)
    for t in tasks:
        _check_member(t, group.path, where)
        t.mapping = {"kind": kind, "args": args, "partial": {}, "group": group.path}
    for root in group.roots():
        for up in upstream:
            root.upstream_ids.add(up.task_id)
    return group if value is None else value


def _mapped_names(
    func: Callable[..., Any],
    kind: str,
    mapped: list[str],
    fixed: dict[str, Any],
    title: str,
    where: Where,
) -> list[str]:
    """The parameters of ``func`` that get a MappedArgument; a mapped or fixed name the
    function does not take, or a parameter nothing gives, is an import error."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return [] if kind == "expand_kwargs" else mapped
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    accepted = {p.name for p in named}
    given = list(fixed) + ([] if kind == "expand_kwargs" else mapped)
    unknown = [n for n in given if n not in accepted and not takes_any]
    if unknown:
        raise _fail(
            f"{title}: {func.__name__}() does not take {', '.join(map(repr, unknown))} "
            f"(it takes: {', '.join(sorted(accepted)) or 'none'})",
            where,
        )
    if kind == "expand_kwargs":  # each item's keys: every parameter not fixed
        return [p.name for p in named if p.name not in fixed]
    missing = [
        p.name
        for p in named
        if p.default is p.empty and p.name not in fixed and p.name not in mapped
    ]
    if missing:
        raise _fail(
            f"{title}: {func.__name__}() needs {', '.join(map(repr, missing))}, which "
            "neither partial() nor expand() gives",
            where,
        )
    return mapped


def _check_member(task: Any, group: str, where: Where) -> None:
    name = f"task {task.task_id!r} of mapped task group {group!r}"
    if task.mapping is not None:
        raise _fail(
            f"{name} is mapped itself: a task inside a mapped group runs once per group "
            "instance (map the group over the combined items instead)",
            where,
        )
    if task.kind not in ("python", "shell"):
        raise _fail(
            f"{name}: only Python and shell tasks can be in a mapped group, not {task.kind} tasks",
            where,
        )
    if task.branch or task.sensor is not None or task.python_env:
        what = "a branch" if task.branch else "a sensor" if task.sensor else "a virtualenv task"
        raise _fail(f"{name} is {what}, which a mapped group cannot hold", where)
    if task.is_setup or task.is_teardown:
        raise _fail(f"{name}: a mapped group cannot hold setup or teardown tasks", where)
