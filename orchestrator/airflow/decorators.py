"""Airflow's ``task`` decorator and its kinds over ours: ``@task``, ``@task.branch``,
``@task.short_circuit``, ``@task.sensor``, ``@task.virtualenv``,
``@task.external_python``, ``@task.bash``; ``@setup`` and ``@teardown``::

    from orchestrator.airflow import task

    @task.short_circuit
    def any_rows(rows):
        return len(rows) > 0            # falsy: the tasks after it are skipped

    @task.bash
    def archive(ds=None):
        return f"tar czf /tmp/{ds}.tgz /etc/hostname"   # run by bash; last line = result

Arguments are Airflow's (``execution_timeout``, ``retry_exponential_backoff``,
``on_failure_callback``...); one we do not support is an import error naming the
file:line and what to write instead. ``task.docker`` and other kinds we lack are
import errors too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from orchestrator.airflow import args as _args
from orchestrator.airflow.runtime import direct_downstream, run_bash
from orchestrator.authoring import decorators as _ours
from orchestrator.authoring.building import _active
from orchestrator.authoring.where import caller, definition_error

__all__ = ["setup", "task", "teardown"]

TASK_ARGS = frozenset({"max_active_tis_per_dag", "show_return_value_in_logs"})
SENSOR_ARGS = frozenset(
    {"poke_interval", "timeout", "mode", "soft_fail", "exponential_backoff", "max_wait"}
)
SHORT_CIRCUIT_ARGS = frozenset({"ignore_downstream_trigger_rules"})
VIRTUALENV_ARGS = frozenset({"requirements", "python_version", "system_site_packages"})
# kinds of @task we do not have, and what to use instead
MISSING_KINDS = {
    "docker": "run the container from @task.bash or a BashOperator (docker run ...)",
    "kubernetes": "run the pod from @task.bash (kubectl ...) or use a worker queue",
    "pyspark": "submit from @task.bash (spark-submit ...)",
    "run_if": "return early from the function, or use @task.short_circuit",
    "skip_if": "return early from the function, or use @task.short_circuit",
    "branch_virtualenv": "use @task.branch and @task.virtualenv separately",
    "branch_external_python": "use @task.branch and @task.external_python separately",
    "sql": "run the query in a @task with your database client",
}


def _options(kind: str, fn: Any, options: dict[str, Any], extra: frozenset[str]) -> dict:
    where = caller()
    task_id = options.get("task_id") or getattr(fn, "__name__", None)
    _args.check_known(kind, task_id, options, TASK_ARGS | extra, where)
    own = {k: v for k, v in options.items() if k not in extra and k != "dag"}
    out = _args.task_options(kind, own, where)
    out.pop("show_return_value_in_logs", None)  # results are always shown in the UI
    if extra is SENSOR_ARGS and "timeout" in out:  # a sensor's timeout is its wait
        out["execution_timeout"] = out.pop("timeout")
    if "task_id" in options:
        out["task_id"] = options["task_id"]
    return out


def _apply(maker: Callable[..., Any], fn: Any, kind: str, options: dict, extra=frozenset()):
    def decorate(func: Callable[..., Any]) -> Any:
        picked = {k: options[k] for k in extra if k in options}
        made = {**picked, **_options(kind, func, options, extra)}
        owner = options.get("dag")
        if not _active and owner is None:  # a module-level @task (Airflow's)
            return _Deferred(maker, func, made, kind, extra)
        if owner is None:
            return _with_override(maker(func, **made), maker, func, made, kind, extra)
        _active.append(owner)  # @task(dag=d): made in d
        try:
            return maker(func, **made)
        finally:
            _active.pop()

    return decorate(fn) if fn is not None else decorate


class _Deferred:
    """A ``@task`` function decorated outside any DAG, as Airflow allows: calling it
    inside ``with DAG(...)`` (or a ``@dag`` function) makes the task there and calls it
    (a second call: ``t__1``); ``.override(task_id=...)``, ``.partial``, ``.expand`` and
    ``.function`` as in Airflow. Outside any DAG it calls the function itself."""

    def __init__(
        self,
        maker: Callable[..., Any],
        fn: Callable[..., Any],
        options: dict,
        kind: str = "@task",
        extra: frozenset[str] = frozenset(),
    ) -> None:
        self._maker, self.function, self._options = maker, fn, options
        self._kind, self._extra = kind, extra
        self._made: dict[int, Any] = {}
        functools.update_wrapper(self, fn)

    def _task(self) -> Any:
        owner = _active[-1]
        made = self._made.get(id(owner))
        if made is None or made.dag is not owner:
            made = self._maker(self.function, **self._options)
            self._made[id(owner)] = made
        return made

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not _active:
            return self.function(*args, **kwargs)
        return self._task()(*args, **kwargs)

    def override(self, **options: Any) -> _Deferred:
        """The same function with other task options (``task_id=``, ``retries=``...)."""
        where = caller()
        kind = f"{self._kind} override()"
        accepted = TASK_ARGS | self._extra
        _args.check_known(kind, options.get("task_id"), options, accepted, where)
        picked = {k: v for k, v in options.items() if k in self._extra}
        own = {k: v for k, v in options.items() if k not in self._extra}
        own = _args.task_options(kind, own, where)
        if "task_id" in options:
            own["task_id"] = options["task_id"]
        made = {**self._options, **own, **picked}
        return _Deferred(self._maker, self.function, made, self._kind, self._extra)

    def partial(self, **fixed: Any) -> Any:
        return self._in_dag("partial").partial(**fixed)

    def expand(self, **sources: Any) -> Any:
        return self._in_dag("expand").expand(**sources)

    def expand_kwargs(self, source: Any) -> Any:
        return self._in_dag("expand_kwargs").expand_kwargs(source)

    def _in_dag(self, what: str) -> Any:
        if not _active:
            raise definition_error(f"{self.function.__name__}.{what}() is called outside a DAG")
        return self._task()


def _with_override(
    made: Any, maker: Callable[..., Any], fn: Any, options: dict, kind: str, extra: frozenset
) -> Any:
    """A task decorated inside a DAG gets Airflow's ``.override(task_id=..., ...)``: a
    new task from the same function with those options (without ``task_id=``: the next
    free ``t__n``, the decorated one holding ``t``); the decorated one, if it is never
    called nor wired, is then dropped as a template (as a copied task is)."""

    def override(**changes: Any) -> Any:
        made.copied = True  # authoring/taskflow.drop_templates drops it when unused
        if "task_id" not in changes:
            prefix, base, n = made.task_id[: -len(made.base_id)], made.base_id, 1
            while f"{prefix}{base}__{n}" in made.dag.tasks:
                n += 1
            changes = {**changes, "task_id": f"{base}__{n}"}
        deferred = _Deferred(maker, fn, options, kind, extra).override(**changes)
        return _with_override(
            maker(fn, **deferred._options), maker, fn, deferred._options, kind, extra
        )

    made.override = override
    return made


class _TaskDecorators:
    """Airflow's ``task``: ``@task``, ``@task(retries=2)`` and its kinds."""

    def __call__(self, python_callable: Any = None, **options: Any) -> Any:
        return _apply(_ours.task, python_callable, "@task", options)

    def branch(self, python_callable: Any = None, **options: Any) -> Any:
        """``@task.branch``: returns the task id(s) to follow among its direct downstream."""
        return _apply(_ours.task.branch, python_callable, "@task.branch", options)

    def short_circuit(
        self, python_callable: Any = None, *, ignore_downstream_trigger_rules: bool = True,
        **options: Any,
    ) -> Any:  # fmt: skip
        """``@task.short_circuit``: a falsy result skips its direct downstream tasks
        (their downstream follow by trigger rule)."""

        def make(func: Callable[..., Any], **opts: Any) -> Any:
            ignore = opts.pop("ignore_downstream_trigger_rules", True)
            if not isinstance(ignore, bool):
                raise definition_error("ignore_downstream_trigger_rules must be True or False")
            holder: dict[str, Any] = {}

            @functools.wraps(func)
            def condition(*a: Any, **kw: Any) -> list[str]:
                value = func(*a, **kw)
                return direct_downstream(holder["task"]) if value else []

            made = _ours.task.branch(condition, **opts)
            holder["task"] = made
            return made

        if not isinstance(ignore_downstream_trigger_rules, bool):
            raise definition_error("ignore_downstream_trigger_rules must be True or False")
        options["ignore_downstream_trigger_rules"] = ignore_downstream_trigger_rules
        return _apply(make, python_callable, "@task.short_circuit", options, SHORT_CIRCUIT_ARGS)

    def sensor(self, python_callable: Any = None, **options: Any) -> Any:
        """``@task.sensor``: Airflow's defaults (``poke_interval=60``, ``mode="poke"``)."""
        options = {"poke_interval": timedelta(seconds=60), "mode": "poke", **options}
        return _apply(_ours.task.sensor, python_callable, "@task.sensor", options, SENSOR_ARGS)

    def virtualenv(self, python_callable: Any = None, **options: Any) -> Any:
        """``@task.virtualenv(requirements=[...], python_version=..., system_site_packages=...)``."""
        version = options.pop("python_version", None)
        if version is not None:
            options["python"] = f"python{version}"
        extra = VIRTUALENV_ARGS - {"python_version"} | {"python"}
        return _apply(_ours.task.virtualenv, python_callable, "@task.virtualenv", options, extra)

    def external_python(self, python_callable: Any = None, **options: Any) -> Any:
        """``@task.external_python(python="/opt/venv/bin/python")``."""
        maker = _ours.task.external_python
        extra = frozenset({"python"})
        return _apply(maker, python_callable, "@task.external_python", options, extra)

    def bash(self, python_callable: Any = None, **options: Any) -> Any:
        """``@task.bash``: the function returns a bash command, run by ``bash -c`` in the
        try; its last line of output is the result. Takes ``env``, ``append_env``,
        ``cwd`` and ``skip_on_exit_code`` (99 by default) as BashOperator does."""
        extra = frozenset({"env", "append_env", "cwd", "skip_on_exit_code"})
        shell = {k: options.pop(k) for k in list(options) if k in extra}

        def make(func: Callable[..., Any], **opts: Any) -> Any:
            @functools.wraps(func)
            def command(*a: Any, **kw: Any) -> Any:
                return run_bash(func(*a, **kw), **shell)

            return _ours.task(command, **opts)

        return _apply(make, python_callable, "@task.bash", options)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        why = MISSING_KINDS.get(name, "use @task, @task.bash or @task.virtualenv")
        raise definition_error(f"@task.{name} is not supported here: {why}", caller())


task = _TaskDecorators()


def setup(python_callable: Any = None, **options: Any) -> Any:
    """Airflow's ``@setup`` (over a function or a ``@task``)."""
    if python_callable is not None and not options:
        return _ours.setup(python_callable)
    return _ours.setup(python_callable, **_options("@setup", python_callable, options, TASK_ARGS))


def teardown(python_callable: Any = None, *, on_failure_fail_dagrun: bool = False, **options):
    """Airflow's ``@teardown`` (``on_failure_fail_dagrun=True`` fails the run with it)."""
    own = _options("@teardown", python_callable, options, TASK_ARGS) if options else {}
    return _ours.teardown(python_callable, on_failure_fail_dagrun=on_failure_fail_dagrun, **own)
