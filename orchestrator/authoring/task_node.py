"""A task: one node of a DAG (a Python callable, a templated shell command, an HTTP
request or a sensor), its options checked at file:line, and its wiring (``>>``).

Tasks are made by :func:`orchestrator.task` (``authoring/decorators.py``),
:meth:`DAG.shell` and :meth:`DAG.http` (``authoring/dag.py``)::

    extract >> [clean, audit] >> load
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from orchestrator.authoring import setup_teardown, task_controls, taskflow
from orchestrator.authoring.alerts import alert_options
from orchestrator.authoring.assets import outlet_list
from orchestrator.authoring.building import _current_group
from orchestrator.authoring.map_index_template import option as map_index_template_option
from orchestrator.authoring.mapped import Partial, check_partial, declare
from orchestrator.authoring.option_checks import _as_timedelta, _check_id, _lost_bound, _or_default
from orchestrator.authoring.python_env import function_source
from orchestrator.authoring.sensor import SensorSpecError, sensor_options
from orchestrator.authoring.task_controls import SKIP_EXIT_CODE
from orchestrator.authoring.task_templates import check_shell_command, env_option, template_file
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.authoring.wiring import Wiring
from orchestrator.authoring.xcom_arg import XComArg
from orchestrator.scheduling.retry import RetryPolicy
from orchestrator.scheduling.trigger_rules import TriggerRule


def _expand_groups(others: list[Any], side: str) -> list[Any]:
    """``others`` with each task group replaced by its ``side`` (roots or leaves)."""
    return [x for o in others for x in (o.members(side) if hasattr(o, "members") else [o])]


class Task(Wiring):
    """One node of a DAG: a Python callable or a templated shell command.

    Create tasks with :func:`task` or :meth:`DAG.shell`, then wire them with
    ``a >> b`` (b runs after a), ``a << b``, and lists: ``a >> [b, c] >> d``.
    """

    def __init__(
        self,
        dag: Any,  # a DAG (authoring/dag.py, which imports this module)
        task_id: str,
        *,
        fn: Callable[..., Any] | None = None,
        command: str | None = None,
        http: dict[str, Any] | None = None,
        response_check: Callable[..., Any] | None = None,
        retries: int | None = None,
        retry_delay: timedelta | float | None = None,
        retry_exponential: bool | None = None,
        max_retry_delay: timedelta | float | None = None,
        max_lost_tries: int | None = None,
        timeout: timedelta | float | None = None,
        trigger_rule: str = "all_success",
        queue: str | None = None,
        pool: str | None = None,
        pool_slots: int = 1,
        description: str | None = None,
        env: dict[str, str] | None = None,
        alerts: Iterable[Any] | None = None,
        on_failure: Callable[..., Any] | None = None,
        on_retry: Callable[..., Any] | None = None,
        branch: bool = False,
        python_env: dict[str, Any] | None = None,
        outlets: Iterable[Any] | None = None,
        # issue 14: task controls (authoring/task_controls.py)
        on_success: Callable[..., Any] | None = None,
        on_execute: Callable[..., Any] | None = None,
        priority_weight: int = 1,
        depends_on_past: bool = False,
        max_active_tis_per_dag: int | None = None,
        skip_on_exit_code: int | None = SKIP_EXIT_CODE,
        run_as_user: str | None = None,
        sensor: dict[str, Any] | None = None,
        check: dict[str, Any] | None = None,
        # issue 25: a dict result's keys are its outputs (None: from a -> dict annotation)
        multiple_outputs: bool | None = None,
        owner: str | None = None,  # issue 25: Airflow's owner (default_args' usually)
        map_index_template: str | None = None,  # issue 25 item 7: instances' names
        doc_md: str | None = None,  # issue 25: Markdown shown on the task's page
        # issue 26: a shell task's working directory (None: the DAG file's folder), and
        # its last line of output as its result (BashOperator's XCom)
        cwd: str | None = None,
        output_last_line: bool = False,
        bash: bool = False,  # issue 26: run with bash -c, not /bin/sh -c (BashOperator)
        where: tuple[str | None, int | None] | None = None,
    ) -> None:
        where = where or _caller()
        self.fileloc, self.lineno = where
        self.task_id = _check_id("task_id", task_id, where)
        self.base_id = task_id  # without its group's prefix (a copy's id: base_id__n)
        if owner is not None and (not isinstance(owner, str) or not owner.strip()):
            raise _fail(f"task {task_id!r}: owner must be a non-empty string", where)
        self.owner = owner
        self.map_index_template = map_index_template_option(task_id, map_index_template, where)
        if doc_md is not None and not isinstance(doc_md, str):
            raise _fail(f"task {task_id!r}: doc_md must be a string (Markdown)", where)
        self.doc_md = doc_md or None
        # issue 15: the assets each successful try records an event for
        self.outlets = outlet_list(outlets, task_id, where)
        group = _current_group(dag)  # issue 14: inside a TaskGroup the id is "group.id"
        self.group = group.path if group is not None else None
        if group is not None:
            self.task_id = _check_id("task_id", group.child_id(task_id), where)
        self.dag = dag
        self.fn = fn
        self.command = command
        self.command_file: str | None = None  # issue 25: a .sh/.sql template file's path
        self.http = http  # the request of an HTTP task (authoring/http_request.py)
        self.response_check = response_check
        self.kind = "python" if fn is not None else "http" if http is not None else "shell"
        # issue 25: the TaskFlow call (authoring/taskflow.py): its arguments, references
        # to upstream results included; ctx_first: the context goes first (None: decide
        # from the function, the ctx style); options: what a copy (t__1) is made with
        self.called = False
        self.copied = False
        self.call_args: tuple[Any, ...] = ()
        self.call_kwargs: dict[str, Any] = {}
        self.ctx_first: bool | None = None
        # issue 25 item 2: parameters given context values by name, **kwargs given the
        # context (authoring/taskflow.check_parameters, at validate)
        self.bound_names: frozenset[str] = frozenset()
        self.context_names: tuple[str, ...] = ()
        self.context_var_kw = False
        self.param_names: frozenset[str] = frozenset()
        self.options: dict[str, Any] = {}
        if multiple_outputs and fn is None:
            raise _fail(f"task {task_id!r}: only a Python task has multiple_outputs", where)
        self.multiple_outputs = (
            bool(multiple_outputs)
            if multiple_outputs is not None
            else fn is not None and taskflow.infer_multiple_outputs(fn)
        )
        # a sensor (issue 15): its options (authoring/sensor.py); a built-in one's
        # declarative check, evaluated by the worker (kind "check")
        self.check = check
        if check is not None:
            self.kind = "check"
        self.sensor = _sensor_of(task_id, sensor, where) if sensor is not None else None
        retries = dag.default_retries if retries is None else retries
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise _fail(
                f"task {task_id!r}: retries must be an integer >= 0, got {retries!r}", where
            )
        self.retries = retries
        # "is None", not "or": an explicit 0 (retry at once) must not fall back to the default
        self.retry_delay = _or_default(
            _as_timedelta("retry_delay", retry_delay, where), dag.retry_delay
        )
        self.retry_exponential = (
            dag.retry_exponential if retry_exponential is None else bool(retry_exponential)
        )
        self.max_retry_delay = _or_default(
            _as_timedelta("max_retry_delay", max_retry_delay, where), dag.max_retry_delay
        )
        # tries lost to infrastructure retried without spending retries; None: the
        # setting ORCHESTRATOR_MAX_LOST_TRIES, read where the loss is recorded
        self.max_lost_tries = _lost_bound(
            f"task {task_id!r}", _or_default(max_lost_tries, dag.max_lost_tries), where
        )
        self.timeout = _or_default(_as_timedelta("timeout", timeout, where), dag.default_timeout)
        try:
            self.trigger_rule = TriggerRule(trigger_rule).value
        except ValueError:
            rules = ", ".join(r.value for r in TriggerRule)
            raise _fail(
                f"task {task_id!r}: unknown trigger_rule {trigger_rule!r} (one of: {rules})", where
            ) from None
        self.queue = _check_id("queue", queue or dag.default_queue, where)
        # a pool caps how many tasks in it run at once, across all workers
        self.pool = _check_id("pool", pool, where) if pool is not None else None
        if not isinstance(pool_slots, int) or isinstance(pool_slots, bool) or pool_slots < 1:
            raise _fail(f"task {task_id!r}: pool_slots must be an integer >= 1", where)
        self.pool_slots = pool_slots
        self.description = description
        # issue 25: env values are templates (files too), rendered for each try
        self.env, self.env_files = env_option(dag, task_id, env, where)
        self.user_templates = False  # its templates use user_defined_macros/filters
        # a branch task returns the task id (or list of ids) of the direct downstream
        # tasks to follow; its other direct downstream tasks are skipped
        self.branch = bool(branch)
        if self.branch and fn is None:
            raise _fail(f"task {task_id!r}: only a Python task can be a branch", where)
        hooks = {"on_failure": on_failure, "on_retry": on_retry}
        hooks.update(on_success=on_success, on_execute=on_execute)  # run in the task process
        controls = task_controls.task_options(
            self.task_id,
            priority_weight=priority_weight,
            depends_on_past=depends_on_past,
            max_active_tis_per_dag=max_active_tis_per_dag,
            skip_on_exit_code=skip_on_exit_code,
            where=where,
        )
        self.priority_weight: int = controls["priority_weight"]
        self.depends_on_past: bool = controls["depends_on_past"]
        self.max_active_tis_per_dag: int | None = controls["max_active_tis_per_dag"]
        self.skip_on_exit_code: int | None = controls["skip_on_exit_code"]
        # issue 24: the OS user its task process runs as (Airflow's name); None: task_user
        self.run_as_user = task_controls.run_as_user_option(self.task_id, run_as_user, where)
        self.alerts, _, self.callbacks = alert_options(
            f"task {task_id!r}", alerts, None, hooks, where
        )
        if (cwd is not None or output_last_line or bash) and command is None:
            raise _fail(
                f"task {task_id!r}: only a shell task has cwd=, output_last_line= or bash=", where
            )
        if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/")):
            raise _fail(f"task {task_id!r}: cwd must be an absolute path, got {cwd!r}", where)
        self.cwd = cwd
        self.output_last_line = bool(output_last_line)
        self.bash = bool(bash)
        if command is not None:
            if not isinstance(command, str) or not command.strip():
                raise _fail(f"task {task_id!r}: command must be a non-empty string", where)
            self.command, self.command_file = template_file(dag, task_id, command, where)
            check_shell_command(task_id, self.command, self.command_file, where)
        # @task.virtualenv / @task.external_python: the interpreter it runs in, and the
        # function's source for it (authoring/python_env.py)
        self.python_env = python_env
        self.python_source = (
            function_source(fn, f"task {task_id!r}", where) if python_env and fn else None
        )
        self.upstream_ids: set[str] = set()
        self.mapping: dict[str, Any] | None = None  # set by expand (authoring/mapped.py)
        # issue 25: setup and teardown tasks (authoring/setup_teardown.py)
        self.is_setup = False
        self.is_teardown = False
        self.on_failure_fail_dagrun = False
        self._pending_upstream: list[tuple[str, tuple[str | None, int | None]]] = []
        dag._add(self, where)

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy.of(self)

    # -- mapping (authoring/mapped.py) -------------------------------------------
    def partial(self, **fixed: Any) -> Partial:
        """Fix some arguments of a task to be mapped: ``t.partial(a=1).expand(b=src)``."""
        where = _caller()
        return Partial(self, check_partial(self, fixed, where), where)

    def expand(self, **sources: Any) -> Task:
        """Map this task over lists: one task instance per item (their cross product)."""
        return declare(self, "expand", sources, {}, _caller())

    def expand_kwargs(self, source: Any) -> Task:
        """Map this task over a list of dicts: one task instance per dict."""
        return declare(self, "expand_kwargs", {"*": source}, {}, _caller())

    # -- setup and teardown (authoring/setup_teardown.py) -------------------------
    def as_setup(self) -> Task:
        """Make this a setup task: ``create.as_setup() >> work``; returns the task."""
        return setup_teardown.mark_setup(self, _caller())

    def as_teardown(
        self, *, setups: Any = None, on_failure_fail_dagrun: bool | None = None
    ) -> Task:
        """Make this a teardown task (of ``setups``, a task or a list, each made a setup
        and wired before it): ``work >> delete.as_teardown(setups=create)``. It runs
        when its setup ran, whatever happened between; its failure fails the run only
        with ``on_failure_fail_dagrun=True``. Returns the task."""
        ups = [] if setups is None else _as_list(setups)
        return setup_teardown.mark_teardown(self, ups, on_failure_fail_dagrun, _caller())

    def __enter__(self) -> Task:
        """``with delete.as_teardown(setups=create):``: see setup_teardown.Scope."""
        self._scopes = [*getattr(self, "_scopes", []), setup_teardown.Scope(self, _caller())]
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        scope = self._scopes.pop()
        if exc_type is None:
            scope.close()

    # -- wiring -----------------------------------------------------------------
    def _resolve(self, other: Task | str, where: tuple[str | None, int | None]) -> Task | str:
        if isinstance(other, XComArg):  # issue 25: a call's result wires as its task
            other = other.task
        if isinstance(other, Task):
            if other.dag is not self.dag:
                raise _fail(
                    f"task {other.task_id!r} belongs to DAG {other.dag.dag_id!r}, "
                    f"not {self.dag.dag_id!r}",
                    where,
                )
            return other
        if isinstance(other, str):
            return other
        raise _fail(f"cannot set a dependency on {other!r}: expected a task or a task id", where)

    def set_downstream(self, others: Task | str | Iterable[Task | str]) -> None:
        where = _caller()
        for other in _expand_groups(_as_list(others), "roots"):
            other = self._resolve(other, where)
            if isinstance(other, Task):
                other.upstream_ids.add(self.task_id)
            else:
                self.dag._pending.append((self.task_id, other, where))

    def set_upstream(self, others: Task | str | Iterable[Task | str]) -> None:
        where = _caller()
        for other in _expand_groups(_as_list(others), "leaves"):
            other = self._resolve(other, where)
            if isinstance(other, Task):
                self.upstream_ids.add(other.task_id)
            else:
                self.dag._pending.append((other, self.task_id, where))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Inside a DAG being built, ``load(extract())`` builds the graph and returns a
        reference to the result (:mod:`orchestrator.authoring.taskflow`); the function
        does not run. Outside any DAG it calls the function (handy in unit tests)."""
        if taskflow.building():
            return taskflow.call(self, args, kwargs, _caller())
        if self.fn is None:
            raise TypeError(f"{self.kind} task {self.task_id!r} is not callable")
        return self.fn(*args, **kwargs)

    @property
    def function(self) -> Callable[..., Any] | None:
        """The task's function, to call it anywhere (Airflow's ``task.function``)."""
        return self.fn

    @property
    def output(self) -> XComArg:
        """A reference to this task's result (Airflow's ``task.output``)."""
        return XComArg(self)

    def __repr__(self) -> str:
        return f"<Task {self.dag.dag_id}.{self.task_id}>"


def _sensor_of(task_id: str, options: dict[str, Any], where: Any) -> dict[str, Any]:
    try:
        return sensor_options(**options)
    except SensorSpecError as exc:
        raise _fail(f"sensor {task_id!r}: {exc}", where) from None
    except TypeError as exc:  # an unknown sensor option
        raise _fail(f"sensor {task_id!r}: {exc}", where) from None


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, Task | str | XComArg) or hasattr(value, "members"):
        return [value]
    if isinstance(value, Iterable):
        return list(value)
    return [value]
