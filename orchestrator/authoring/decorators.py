"""``@task`` and its kinds (``@task.branch``, ``@task.virtualenv``,
``@task.external_python``, ``@task.sensor``), ``@setup`` and ``@teardown``: each makes a
:class:`~orchestrator.authoring.task_node.Task` in the DAG being built::

    with DAG("etl") as dag:
        @task(retries=2)
        def extract(ctx):
            return {"rows": 3}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from orchestrator.authoring import setup_teardown
from orchestrator.authoring.building import _active
from orchestrator.authoring.dag_vocabulary import own_names
from orchestrator.authoring.python_env import python_env_options
from orchestrator.authoring.sensor import split_sensor_options
from orchestrator.authoring.task_node import Task
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail


def _make_task_decorator(dag: Any, fn: Callable[..., Any] | None, options: dict[str, Any]) -> Any:
    where = _caller()

    def decorate(func: Callable[..., Any]) -> Task:
        if not callable(func):
            raise _fail(f"@task needs a function, got {func!r}", where)
        owner = dag or (_active[-1] if _active else None)
        # options is not mutated: one task(...) decorator may be applied to several functions
        task_id = options.get("task_id") or func.__name__
        rest = {k: v for k, v in options.items() if k != "task_id"}
        rest = own_names(rest, task_id, where)  # Airflow's names (execution_timeout...)
        rest = {**getattr(owner, "task_defaults", {}), **rest}  # DAG default_args
        if owner is None:
            raise _fail(f"task {task_id!r} is defined outside a DAG: use 'with DAG(...):'", where)
        made = Task(owner, task_id, fn=func, where=where, **rest)
        made.options = rest  # a second call makes a copy with them (authoring/taskflow.py)
        return made

    if fn is not None:
        return decorate(fn)
    return decorate


def task(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Declare a Python task in the current DAG.

    Use bare (``@task``) or with options (``@task(retries=3, timeout=60)``). The
    function receives the task context. To make several tasks from one function,
    give each an id: ``task(task_id=f"load_{n}")(load)``.
    """
    return _make_task_decorator(None, fn, options)


def _branch(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@task.branch``: a task that returns which direct downstream task(s) to follow.

    Return a task id, a list of ids, or None/[] to follow none; every other direct
    downstream task is skipped, and the skip propagates by trigger rule::

        @task.branch
        def pick(ctx):
            return "full_load" if ctx.params["full"] else "delta_load"
    """
    return _make_task_decorator(None, fn, {**options, "branch": True})


task.branch = _branch  # type: ignore[attr-defined]


def _virtualenv(
    fn: Callable[..., Any] | None = None,
    *,
    requirements: Iterable[str] | str | None = None,
    python: str | None = None,
    system_site_packages: bool = False,
    **options: Any,
) -> Any:
    """``@task.virtualenv``: run the function in a virtual environment with
    ``requirements`` installed, built once per requirements set and cached; see
    :mod:`orchestrator.authoring.python_env`. Takes every task option::

        @task.virtualenv(requirements=["tabulate==0.10.0"], retries=2)
        def pretty(ctx):
            import tabulate
            return tabulate.tabulate(ctx.upstream("load"))
    """
    env = python_env_options("virtualenv", requirements, python, system_site_packages, _caller())
    return _make_task_decorator(None, fn, {**options, "python_env": env})


def _external_python(
    fn: Callable[..., Any] | None = None, *, python: str | None = None, **options: Any
) -> Any:
    """``@task.external_python(python="/opt/venvs/x/bin/python")``: run the function with
    an existing interpreter (its packages, not the worker's)."""
    env = python_env_options("external_python", None, python, False, _caller())
    return _make_task_decorator(None, fn, {**options, "python_env": env})


task.virtualenv = _virtualenv  # type: ignore[attr-defined]
task.external_python = _external_python  # type: ignore[attr-defined]


def _sensor(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@task.sensor``: a task that pokes until its function returns something truthy.

    Takes everything :func:`task` takes (``task_id=``, ``retries=``...) and
    ``poke_interval`` (required), ``timeout`` (how long it may wait in all, from its
    first poke; 7 days by default), ``mode`` (``"reschedule"``: between pokes it waits
    in the store, holding no worker slot; ``"poke"``: it loops inside one try),
    ``exponential_backoff``, ``max_wait`` and ``soft_fail`` (skip instead of failing
    on timeout). The truthy value goes downstream as its result; the time limit of
    one poke is ``execution_timeout``::

        @task.sensor(poke_interval=timedelta(seconds=30), timeout=timedelta(hours=6))
        def partner_file(ctx):
            return os.path.exists(f"/data/partner/{ctx.ds}.csv")
    """
    sensor, rest = split_sensor_options(options)
    return _make_task_decorator(None, fn, {**rest, "sensor": sensor})


task.sensor = _sensor  # type: ignore[attr-defined]


def setup(fn: Any = None, **options: Any) -> Any:
    """``@setup``: a task that creates what the tasks after it use (Airflow's name).

    On a function it makes a Python task (taking :func:`task`'s options:
    ``@setup(retries=2)``); on a task it marks that task (``@setup`` over ``@task(...)``).
    Pair it with a :func:`teardown` that runs after the work (see
    :mod:`orchestrator.authoring.setup_teardown`)::

        @setup
        def create_cluster(ctx): ...
    """
    where = _caller()

    def mark(obj: Any) -> Task:
        made = obj if isinstance(obj, Task) else _make_task_decorator(None, obj, options)
        return setup_teardown.mark_setup(made, where)

    return mark(fn) if fn is not None else mark


def teardown(fn: Any = None, *, on_failure_fail_dagrun: bool = False, **options: Any) -> Any:
    """``@teardown``: a task that removes what a setup created; it runs when its setup
    ran, whatever happened between, and its failure fails the run only with
    ``on_failure_fail_dagrun=True``. Wire it after the work and after its setup::

        @teardown
        def delete_cluster(ctx): ...

        create_cluster >> run_query >> delete_cluster
        create_cluster >> delete_cluster
    """
    where = _caller()
    if "trigger_rule" in options:
        raise _fail(
            f"a teardown's trigger rule is {setup_teardown.TEARDOWN_RULE!r}: drop "
            f"trigger_rule={options['trigger_rule']!r}",
            where,
        )

    def mark(obj: Any) -> Task:
        # its own rule, explicit: default_args' trigger_rule is not a teardown's
        own = {**options, "trigger_rule": setup_teardown.TEARDOWN_RULE}
        made = obj if isinstance(obj, Task) else _make_task_decorator(None, obj, own)
        return setup_teardown.mark_teardown(made, [], on_failure_fail_dagrun, where)

    return mark(fn) if fn is not None else mark
