"""Task groups: a named box of tasks inside a DAG, wired as one (Airflow's TaskGroup).

A task created inside ``with TaskGroup("extract"):`` gets the id ``extract.<its id>``;
groups nest (``outer.inner.a``). ``g >> t`` makes ``t`` run after every *leaf* of the
group (a task of the group with no downstream task inside it), ``t >> g`` makes every
*root* of the group (no upstream task inside it) run after ``t``, and lists mix tasks
and groups: ``[g1, g2] >> t``. The group path is stored with each task, so the web UI
draws a group as one box and groups the grid's rows::

    with DAG("etl") as dag:
        with TaskGroup("extract") as extract:
            @task
            def a(ctx): ...
            @task
            def b(ctx): ...
        @task
        def load(ctx): ...
        extract >> load          # extract.a >> load and extract.b >> load

The decorator form calls the function inside a new group named after it::

    @task_group
    def clean():
        ...
    clean()                      # the tasks it creates are clean.<id>
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from orchestrator.authoring import dag as dag_module
from orchestrator.authoring.dag import DAG, Task
from orchestrator.authoring.mapped_group import mapped_group
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.wiring import Wiring
from orchestrator.scheduling.mapping import KWARGS

_open = dag_module._groups  # the groups being built, innermost last (Task reads it)


class TaskGroup(Wiring):
    """A group of tasks; ``with TaskGroup("name") as g:`` (see the module docstring)."""

    def __init__(self, group_id: str, *, dag: DAG | None = None, tooltip: str = "") -> None:
        where = dag_module._caller()
        self.fileloc, self.lineno = where
        self.where = where
        owner = dag or (dag_module._active[-1] if dag_module._active else None)
        if owner is None:
            raise dag_module._fail(
                f"task group {group_id!r} is defined outside a DAG: use 'with DAG(...):'", where
            )
        dag_module._check_id("group_id", group_id, where)
        if "." in group_id:
            raise dag_module._fail(
                f"invalid group_id {group_id!r}: '.' separates nested groups, "
                "nest a TaskGroup instead",
                where,
            )
        self.dag: DAG = owner
        self.parent = dag_module._current_group(owner)
        self.group_id = group_id
        self.path = f"{self.parent.path}.{group_id}" if self.parent else group_id
        self.tooltip = tooltip
        self.mapping: dict[str, Any] | None = None  # a mapped group's sources (issue 25)
        groups = owner.task_groups
        first = groups.get(self.path)
        if first is not None:
            raise dag_module._fail(
                f"duplicate task group {self.path!r} in DAG {owner.dag_id!r} "
                f"(first defined at line {first.lineno})",
                where,
            )
        if self.path in owner.tasks:
            raise dag_module._fail(
                f"task group {self.path!r} has the id of a task of DAG {owner.dag_id!r} "
                f"(defined at line {owner.tasks[self.path].lineno})",
                where,
            )
        groups[self.path] = self

    def child_id(self, task_id: str) -> str:
        return f"{self.path}.{task_id}"

    # -- membership --------------------------------------------------------------------
    @property
    def tasks(self) -> list[Task]:
        """Every task of this group and of the groups nested in it, in creation order."""
        prefix = self.path + "."
        return [t for t in self.dag.tasks.values() if t.task_id.startswith(prefix)]

    def _ids(self) -> set[str]:
        return {t.task_id for t in self.tasks}

    def roots(self) -> list[Task]:
        """The group's tasks with no upstream task inside the group."""
        ids = self._ids()
        return [t for t in self.tasks if not (t.upstream_ids & ids)]

    def leaves(self) -> list[Task]:
        """The group's tasks with no downstream task inside the group.

        Teardowns are passed over, as in Airflow (issue 25): in place of a teardown
        that ends the group, the work before it (not its setup) is a leaf, so
        ``group >> next`` does not make ``next`` wait for the clean-up."""
        tasks = self.tasks
        by_id = {t.task_id: t for t in tasks}
        down: dict[str, set[str]] = {t.task_id: set() for t in tasks}
        for t in tasks:
            for u in t.upstream_ids & by_id.keys():
                down[u].add(t.task_id)

        def before(t: Task) -> list[Task]:  # the first non-teardowns before a teardown
            out = []
            for u in sorted(t.upstream_ids & by_id.keys()):
                up = by_id[u]
                if up.is_teardown:
                    out += before(up)
                elif not (t.is_teardown and up.is_setup) and not any(
                    d != t.task_id and not by_id[d].is_teardown for d in down[u]
                ):
                    out.append(up)
            return out

        found: list[Task] = []
        for t in tasks:
            if not down[t.task_id]:
                found += before(t) if t.is_teardown else [t]
        return list(dict.fromkeys(found))

    # -- context manager ---------------------------------------------------------------
    def __enter__(self) -> TaskGroup:
        _open.append(self)
        return self

    def __exit__(self, *_: Any) -> None:
        _open.remove(self)

    # -- wiring --------------------------------------------------------------------------
    def members(self, side: str) -> list[Task]:
        """The ``"roots"`` or ``"leaves"`` a dependency on this group connects."""
        tasks = self.roots() if side == "roots" else self.leaves()
        return self._edges(tasks, "wire")

    def _edges(self, tasks: list[Task], what: str) -> list[Task]:
        if not tasks:
            raise dag_module._fail(f"task group {self.path!r} has no tasks to {what}")
        return tasks

    def set_downstream(self, others: Any) -> None:
        for leaf in self._edges(self.leaves(), "run before others"):
            leaf.set_downstream(others)

    def set_upstream(self, others: Any) -> None:
        for root in self._edges(self.roots(), "run after others"):
            root.set_upstream(others)

    def __repr__(self) -> str:
        return f"<TaskGroup {self.dag.dag_id}.{self.path}>"


def task_group(
    fn: Callable[..., Any] | None = None, *, group_id: str | None = None, tooltip: str = ""
) -> Any:
    """``@task_group``: calling the function builds its tasks inside a new group.

    The group is named after the function unless ``group_id=`` says otherwise; a
    second call gives ``name__1``, ``name__2``... as in Airflow. The call returns the
    :class:`TaskGroup`, so ``clean() >> load`` wires it, or, as in Airflow, what the
    function returns when that is not None (issue 25: a reference,
    ``load(clean(extract()))``, or a task). ``.expand(...)``, ``.partial(...)`` and
    ``.expand_kwargs(...)`` map the group: one group instance per item
    (:mod:`orchestrator.authoring.mapped_group`)::

        @task_group
        def per_file(path):
            load(clean(path))

        per_file.expand(path=["a.csv", "b.csv"])
    """

    def decorate(func: Callable[..., Any]) -> GroupFunction:
        return GroupFunction(func, group_id or func.__name__, tooltip)

    return decorate(fn) if fn is not None else decorate


class GroupFunction:
    """A ``@task_group`` function: call it to build the group, or map it."""

    def __init__(self, func: Callable[..., Any], group_id: str, tooltip: str) -> None:
        functools.update_wrapper(self, func)
        self.function = func
        self.group_id = group_id
        self.tooltip = tooltip

    def _open(self, dag: DAG | None = None) -> TaskGroup:
        owner = dag or (dag_module._active[-1] if dag_module._active else None)
        name = self.group_id
        if owner is not None:  # Airflow's add_suffix_on_collision: tg, tg__1, tg__2...
            parent = dag_module._current_group(owner)
            taken = set(owner.task_groups) | set(owner.tasks)
            n = 0
            while (f"{parent.path}.{name}" if parent else name) in taken:
                n += 1
                name = f"{self.group_id}__{n}"
        return TaskGroup(name, dag=owner, tooltip=self.tooltip)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._open() as group:
            value = self.function(*args, **kwargs)
        return group if value is None else value

    def partial(self, **fixed: Any) -> _PartialGroup:
        """Fix some arguments of a group to be mapped: ``g.partial(a=1).expand(b=src)``."""
        return _PartialGroup(self, fixed)

    def expand(self, **sources: Any) -> Any:
        """One group instance per item of ``sources`` (their cross product)."""
        return mapped_group(self._open, self.function, "expand", sources, {}, _caller())

    def expand_kwargs(self, source: Any) -> Any:
        """One group instance per dict of the list ``source`` (its keys: the arguments)."""
        return mapped_group(
            self._open, self.function, "expand_kwargs", {KWARGS: source}, {}, _caller()
        )


class _PartialGroup:
    def __init__(self, factory: GroupFunction, fixed: dict[str, Any]) -> None:
        self._factory = factory
        self._fixed = fixed

    def expand(self, **sources: Any) -> Any:
        f = self._factory
        return mapped_group(f._open, f.function, "expand", sources, self._fixed, _caller())

    def expand_kwargs(self, source: Any) -> Any:
        f = self._factory
        sources = {KWARGS: source}
        return mapped_group(f._open, f.function, "expand_kwargs", sources, self._fixed, _caller())
