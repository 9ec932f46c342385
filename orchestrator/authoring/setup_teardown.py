"""Setup and teardown tasks as a DAG file declares them (issue 25, Airflow's names).

What a DAG file writes::

    from orchestrator import DAG, setup, task, teardown

    with DAG("report", schedule=None) as dag:
        @setup
        def create_cluster(ctx): ...

        @task
        def run_query(ctx): ...

        @teardown
        def delete_cluster(ctx): ...

        create_cluster >> run_query >> delete_cluster
        create_cluster >> delete_cluster          # the pair: the teardown's setup

or, on tasks made any way: ``create.as_setup() >> query >> delete.as_teardown(setups=create)``
(``setups=`` marks those tasks as setups and makes each run before the teardown).

A teardown's trigger rule is ``all_done_setup_success``: it runs once everything before
it is done if one of its setups succeeded, whatever happened between; it is ignored
when the run's state is decided unless ``on_failure_fail_dagrun=True``. The rules are
in :mod:`orchestrator.scheduling.trigger_rules` and
:mod:`orchestrator.scheduling.setup_teardown`; this module marks tasks and checks what
was declared, naming file:line. It does not import ``dag.py``: it works on the tasks
it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orchestrator.authoring.where import Where
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.scheduling.trigger_rules import TriggerRule

TEARDOWN_RULE = TriggerRule.ALL_DONE_SETUP_SUCCESS.value


def mark_setup(task: Any, where: Where) -> Any:
    """Make ``task`` a setup task; returns it."""
    if task.is_teardown:
        raise _fail(
            f"task {task.task_id!r} is a teardown: a task is a setup or a teardown, not both",
            where,
        )
    task.is_setup = True
    return task


def mark_teardown(
    task: Any,
    setups: Iterable[Any],
    on_failure_fail_dagrun: bool | None,
    where: Where,
) -> Any:
    """Make ``task`` a teardown of ``setups`` (each made a setup and wired before it)."""
    if task.is_setup:
        raise _fail(
            f"task {task.task_id!r} is a setup: a task is a setup or a teardown, not both",
            where,
        )
    if task.trigger_rule not in (TriggerRule.ALL_SUCCESS.value, TEARDOWN_RULE):
        raise _fail(
            f"task {task.task_id!r}: a teardown's trigger rule is {TEARDOWN_RULE!r} (it "
            f"runs when its setup ran, whatever happened between); drop "
            f"trigger_rule={task.trigger_rule!r}",
            where,
        )
    if on_failure_fail_dagrun is not None and not isinstance(on_failure_fail_dagrun, bool):
        raise _fail(
            f"task {task.task_id!r}: on_failure_fail_dagrun must be True or False, "
            f"got {on_failure_fail_dagrun!r}",
            where,
        )
    setups = list(setups)
    for s in setups:
        if not hasattr(s, "task_id") or not hasattr(s, "is_setup"):
            raise _fail(
                f"task {task.task_id!r}: as_teardown(setups=...) takes tasks, got {s!r}", where
            )
        if s is task:
            raise _fail(f"task {task.task_id!r} cannot be its own setup", where)
        if s.dag is not task.dag:
            raise _fail(
                f"setup {s.task_id!r} belongs to DAG {s.dag.dag_id!r}, not {task.dag.dag_id!r}",
                where,
            )
    task.is_teardown = True
    task.trigger_rule = TEARDOWN_RULE
    if on_failure_fail_dagrun is not None:
        task.on_failure_fail_dagrun = on_failure_fail_dagrun
    for s in setups:
        mark_setup(s, where)
        s.set_downstream(task)
    return task


class Scope:
    """``with delete.as_teardown(setups=create):`` (or ``with create.as_setup():``): the
    tasks created (or first called) inside run after the setups and before the teardowns
    (Airflow's setup/teardown context manager). On exit, every task made inside with no upstream
    task made inside gets the setups upstream; every one with no downstream task made
    inside gets the teardowns downstream."""

    def __init__(self, task: Any, where: Where) -> None:
        if not (task.is_setup or task.is_teardown):
            raise _fail(
                f"task {task.task_id!r} is neither a setup nor a teardown: only those open "
                "a 'with' block (write `with t.as_teardown(setups=s):`)",
                where,
            )
        self.task = task
        self.before = set(task.dag.tasks)
        # issue 26: a task defined before and first called inside is made inside too
        # (in Airflow the call makes it: `with teardown(setup()): work()`)
        self.called_before = {t.task_id for t in task.dag.tasks.values() if t.called}

    def close(self) -> None:
        task, dag = self.task, self.task.dag
        made = [
            t
            for t in dag.tasks.values()
            if t.task_id not in self.before or (t.called and t.task_id not in self.called_before)
        ]
        ids = {t.task_id for t in made}
        if task.is_teardown:
            setups = [dag.tasks[u] for u in sorted(task.upstream_ids) if dag.tasks[u].is_setup]
            teardowns = [task]
        else:
            setups = [task]
            teardowns = [
                t for t in dag.tasks.values() if t.is_teardown and task.task_id in t.upstream_ids
            ]
        inner_up = {u for t in made for u in t.upstream_ids if u in ids}
        for t in made:
            if not t.upstream_ids & ids:
                for s in setups:
                    s.set_downstream(t)
            if t.task_id not in inner_up:
                for end in teardowns:
                    t.set_downstream(end)


def check_dag(dag: Any) -> None:
    """Once a DAG's edges are known: a task right after a setup (a teardown excepted)
    has the trigger rule ``all_success``, as Airflow requires (clearing it clears the
    setup, which must then succeed again before it runs)."""
    setups = {t.task_id for t in dag.tasks.values() if t.is_setup}
    if not setups:
        return
    for t in dag.tasks.values():
        if t.is_teardown or t.trigger_rule == TriggerRule.ALL_SUCCESS.value:
            continue
        before = sorted(setups & t.upstream_ids)
        if before:
            raise _fail(
                f"task {t.task_id!r} runs right after setup {before[0]!r}, so its trigger "
                f"rule must be 'all_success', not {t.trigger_rule!r} (a setup must succeed "
                "before the tasks it sets up)",
                (t.fileloc, t.lineno),
            )


def spec_fields(task: Any) -> dict[str, Any]:
    """What the DAG spec stores of a task's role, only when it has one (a DAG without
    setups and teardowns keeps its version hash)."""
    out: dict[str, Any] = {}
    if task.is_setup:
        out["is_setup"] = True
    if task.is_teardown:
        out["is_teardown"] = True
        if task.on_failure_fail_dagrun:
            out["on_failure_fail_dagrun"] = True
    return out
