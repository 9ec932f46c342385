"""The authoring API: :class:`DAG`, :func:`task`, shell tasks and ``>>``.

A DAG file builds DAG objects; nothing here touches the database. Mistakes raise
:class:`DagDefinitionError` naming the file and line of the offending statement::

    from datetime import datetime, timedelta
    from orchestrator import DAG, task

    with DAG("etl", schedule="0 2 * * *", timezone="Europe/Berlin",
             start_date=datetime(2026, 1, 1), default_retries=2) as dag:

        @task
        def extract(ctx):
            return {"rows": 3}

        @task(retries=5, timeout=timedelta(minutes=10))
        def load(ctx):
            ctx.log.info("loading %s rows", ctx.upstream("extract")["rows"])

        archive = dag.shell("archive", "tar czf /tmp/{{ ds }}.tgz /etc/hostname")
        extract >> load >> archive
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import networkx as nx

from orchestrator.authoring import setup_teardown, task_controls
from orchestrator.authoring.alerts import alert_options
from orchestrator.authoring.assets import (  # Asset... re-exported: orchestrator's names
    Asset,  # noqa: F401
    AssetOrTimeSchedule,  # noqa: F401
    outlet_list,
    split_schedule,
)
from orchestrator.authoring.http_request import HttpSpecError, http_spec
from orchestrator.authoring.mapped import ParamRef, Partial, check_partial, declare
from orchestrator.authoring.params import Param  # noqa: F401 - public: orchestrator.Param
from orchestrator.authoring.params import declare as declare_params
from orchestrator.authoring.python_env import function_source, python_env_options
from orchestrator.authoring.sensor import (  # issue 15
    PokeReturnValue,  # noqa: F401 - public: orchestrator.PokeReturnValue
    SensorSpecError,
    sensor_options,
    split_sensor_options,
)
from orchestrator.authoring.task_controls import SKIP_EXIT_CODE
from orchestrator.authoring.task_templates import (
    check_dag_templates,
    check_shell_command,
    env_option,
    template_file,
)
from orchestrator.authoring.template_check import user_templates
from orchestrator.authoring.templating import TemplateRenderError
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.authoring.wiring import Wiring
from orchestrator.scheduling.asset_conditions import AssetAll, AssetAny  # noqa: F401
from orchestrator.scheduling.retry import RetryPolicy
from orchestrator.scheduling.schedule import Schedule, ScheduleError, parse_schedule
from orchestrator.scheduling.trigger_rules import TriggerRule

# every id (dag, task, queue, pool): 1-250 ASCII letters, digits, '_', '.', '-', not
# starting with '.' or '-'; matched whole (fullmatch), so no trailing newline slips through
ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,249}")
ID_RULE = "1 to 250 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
MISFIRE_POLICIES = ("backfill", "coalesce", "skip")
OVERLAP_POLICIES = ("queue", "skip", "allow", "replace", "buffer_one")

_active: list[DAG] = []
_created: list[DAG] = []  # every DAG built; the loader reads and clears it
_loading: list[str] = []  # the DAG files the loader is importing now (dag.test() refuses)
# issue 14: the TaskGroups being built, innermost last (authoring/task_group.py pushes
# them; it imports this module, so groups are known here by their shape only)
_groups: list[Any] = []


def _current_group(dag: DAG) -> Any:
    return next((g for g in reversed(_groups) if g.dag is dag), None)


def _expand_groups(others: list[Any], side: str) -> list[Any]:
    """``others`` with each task group replaced by its ``side`` (roots or leaves)."""
    return [x for o in others for x in (o.members(side) if hasattr(o, "members") else [o])]


def _check_id(kind: str, value: Any, where: tuple[str | None, int | None]) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise _fail(f"invalid {kind} {value!r}: an id is {ID_RULE}", where)
    return value


def _as_timedelta(name: str, value: Any, where: tuple[str | None, int | None]) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = timedelta(seconds=value)
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise _fail(
            f"{name} must be a non-negative timedelta or number of seconds, got {value!r}", where
        )
    return value


def _search_path(dag_id: str, value: Any, where: tuple[str | None, int | None]) -> list[str]:
    """``template_searchpath``: a folder or a list of folders (strings)."""
    folders = [value] if isinstance(value, str) else list(value or ())
    if not all(isinstance(f, str) and f for f in folders):
        raise _fail(
            f"DAG {dag_id!r}: template_searchpath must be a folder or a list of folders, "
            f"got {value!r}",
            where,
        )
    return folders


def _or_default(value: timedelta | None, default: timedelta | None) -> timedelta | None:
    return default if value is None else value


def _lost_bound(what: str, value: Any, where: tuple[str | None, int | None]) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _fail(f"{what}: max_lost_tries must be an integer >= 0, got {value!r}", where)
    return value


class Task(Wiring):
    """One node of a DAG: a Python callable or a templated shell command.

    Create tasks with :func:`task` or :meth:`DAG.shell`, then wire them with
    ``a >> b`` (b runs after a), ``a << b``, and lists: ``a >> [b, c] >> d``.
    """

    def __init__(
        self,
        dag: DAG,
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
        sensor: dict[str, Any] | None = None,
        check: dict[str, Any] | None = None,
        where: tuple[str | None, int | None] | None = None,
    ) -> None:
        where = where or _caller()
        self.fileloc, self.lineno = where
        self.task_id = _check_id("task_id", task_id, where)
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
        self.alerts, _, self.callbacks = alert_options(
            f"task {task_id!r}", alerts, None, hooks, where
        )
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
        """Calling a python task calls its function (handy in unit tests)."""
        if self.fn is None:
            raise TypeError(f"{self.kind} task {self.task_id!r} is not callable")
        return self.fn(*args, **kwargs)

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
    if isinstance(value, Task | str) or hasattr(value, "members"):
        return [value]
    if isinstance(value, Iterable):
        return list(value)
    return [value]


class DAG:
    """A workflow: tasks, their dependencies, a schedule and its policies.

    ``schedule`` is a cron string (5 fields, or 6 with seconds last), a preset
    (``@hourly``, ``@daily``...), a ``timedelta``, ``"@once"`` or ``None`` (manual
    only), always evaluated in ``timezone`` (UTC when not given). A naive
    ``start_date`` or ``end_date`` (no tzinfo) is read in ``timezone``, so
    ``datetime(2026, 1, 1)`` is midnight UTC unless ``timezone=`` says otherwise
    (Airflow's rule); an aware one keeps its own zone.
    """

    def __init__(
        self,
        dag_id: str,
        *,
        schedule: Any = None,
        timezone: str | None = None,
        start_date: datetime | None = None,
        end_date: datetime | None = None,
        description: str | None = None,
        tags: Iterable[str] = (),
        params: dict[str, Any] | None = None,
        misfire: str = "coalesce",
        misfire_grace: timedelta | float = timedelta(minutes=5),
        catchup_window: timedelta | float | None = None,
        max_active_runs: int | None = None,
        overlap: str = "allow",
        default_retries: int = 0,
        retry_delay: timedelta | float = timedelta(seconds=30),
        retry_exponential: bool = True,
        max_retry_delay: timedelta | float = timedelta(hours=1),
        max_lost_tries: int | None = None,
        default_timeout: timedelta | float | None = None,
        default_queue: str = "default",
        paused: bool = False,
        alerts: Iterable[Any] | None = None,
        deadline: timedelta | float | None = None,
        on_failure: Callable[..., Any] | None = None,
        on_success: Callable[..., Any] | None = None,
        on_retry: Callable[..., Any] | None = None,
        on_missed: Callable[..., Any] | None = None,
        max_active_tasks: int | None = None,  # issue 14: task controls
        dagrun_timeout: timedelta | float | None = None,
        # issue 25: templates (authoring/template_check.py, template_files.py)
        user_defined_macros: dict[str, Any] | None = None,
        user_defined_filters: dict[str, Callable[..., Any]] | None = None,
        template_searchpath: str | Iterable[str] | None = None,
    ) -> None:
        where = _caller()
        self.fileloc, self.lineno = where
        self.dag_id = _check_id("dag_id", dag_id, where)
        self.description = description
        self.tags = [str(t) for t in tags]
        self.timezone = timezone or "UTC"
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            raise _fail(f"DAG {dag_id!r}: unknown timezone {self.timezone!r}", where) from None
        self.start_date = self._aware(dag_id, "start_date", start_date, zone, where)
        self.end_date = self._aware(dag_id, "end_date", end_date, zone, where)
        if misfire not in MISFIRE_POLICIES:
            raise _fail(
                f"DAG {dag_id!r}: misfire must be one of {MISFIRE_POLICIES}, got {misfire!r}", where
            )
        if overlap not in OVERLAP_POLICIES:
            raise _fail(
                f"DAG {dag_id!r}: overlap must be one of {OVERLAP_POLICIES}, got {overlap!r}", where
            )
        if max_active_runs is None:
            max_active_runs = 16 if overlap == "allow" else 1
        if (
            not isinstance(max_active_runs, int)
            or isinstance(max_active_runs, bool)
            or max_active_runs < 1
        ):
            raise _fail(f"DAG {dag_id!r}: max_active_runs must be an integer >= 1", where)
        if overlap != "allow" and max_active_runs != 1:
            raise _fail(
                f"DAG {dag_id!r}: max_active_runs={max_active_runs} needs overlap='allow'; "
                f"overlap={overlap!r} runs one run at a time",
                where,
            )
        self.misfire = misfire
        self.misfire_grace = _as_timedelta("misfire_grace", misfire_grace, where)
        self.catchup_window = _as_timedelta("catchup_window", catchup_window, where)
        self.max_active_runs = max_active_runs
        self.overlap = overlap
        if (
            not isinstance(default_retries, int)
            or isinstance(default_retries, bool)
            or default_retries < 0
        ):
            raise _fail(f"DAG {dag_id!r}: default_retries must be an integer >= 0", where)
        self.default_retries = default_retries
        self.retry_delay = _as_timedelta("retry_delay", retry_delay, where)
        self.retry_exponential = bool(retry_exponential)
        self.max_retry_delay = _as_timedelta("max_retry_delay", max_retry_delay, where)
        self.max_lost_tries = _lost_bound(f"DAG {dag_id!r}", max_lost_tries, where)
        self.default_timeout = _as_timedelta("default_timeout", default_timeout, where)
        self.default_queue = default_queue
        self.paused = bool(paused)
        hooks = {"on_failure": on_failure, "on_success": on_success}
        hooks.update(on_retry=on_retry, on_missed=on_missed)
        self.alerts, self.deadline, self.callbacks = alert_options(
            f"DAG {dag_id!r}", alerts, deadline, hooks, where
        )
        # issue 15: an asset schedule is a condition beside the (maybe absent) time part
        schedule, self.asset_condition = split_schedule(schedule, dag_id, where)
        # issue 25: plain params and typed Params (authoring/params.py); a required
        # param (no default) only on a DAG without a schedule
        try:
            self.params, self.param_schemas, self.required_params = declare_params(
                params, schedule is not None or self.asset_condition is not None
            )
        except ValueError as exc:
            raise _fail(f"DAG {dag_id!r}: {exc}", where) from None
        controls = task_controls.dag_options(
            dag_id, max_active_tasks=max_active_tasks, dagrun_timeout=dagrun_timeout, where=where
        )
        self.max_active_tasks: int | None = controls["max_active_tasks"]
        self.dagrun_timeout: timedelta | None = controls["dagrun_timeout"]
        try:
            self.schedule: Schedule = parse_schedule(
                schedule, timezone=self.timezone, start=self.start_date, end=self.end_date
            )
        except ScheduleError as exc:
            raise _fail(f"DAG {dag_id!r}: {exc}", where) from None
        try:
            self.user_defined_macros, self.user_defined_filters = user_templates(
                user_defined_macros, user_defined_filters
            )
        except ValueError as exc:
            raise _fail(f"DAG {dag_id!r}: {exc}", where) from None
        self.template_searchpath = _search_path(dag_id, template_searchpath, where)
        self.tasks: dict[str, Task] = {}
        self.task_groups: dict[str, Any] = {}  # TaskGroups by path (issue 14)
        self._pending: list[tuple[str, str, tuple[str | None, int | None]]] = []
        _created.append(self)

    @staticmethod
    def _aware(
        dag_id: str,
        name: str,
        value: datetime | None,
        zone: ZoneInfo,
        where: Any,
    ) -> datetime | None:
        """``value`` made aware: a naive datetime is wall time in the DAG's zone."""
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise _fail(f"DAG {dag_id!r}: {name} must be a datetime, got {value!r}", where)
        if value.tzinfo is None or value.utcoffset() is None:
            value = value.replace(tzinfo=zone)
        return value

    # -- context manager --------------------------------------------------------
    def __enter__(self) -> DAG:
        _active.append(self)
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        _active.remove(self)
        if exc_type is None:
            self.validate()

    # -- building ---------------------------------------------------------------
    def _add(self, task_obj: Task, where: tuple[str | None, int | None]) -> None:
        if task_obj.task_id in self.tasks:
            first = self.tasks[task_obj.task_id]
            raise _fail(
                f"duplicate task_id {task_obj.task_id!r} in DAG {self.dag_id!r} "
                f"(first defined at line {first.lineno})",
                where,
            )
        if task_obj.task_id in self.task_groups:
            group = self.task_groups[task_obj.task_id]
            raise _fail(
                f"task_id {task_obj.task_id!r} in DAG {self.dag_id!r} is the id of a task "
                f"group (defined at line {group.lineno})",
                where,
            )
        self.tasks[task_obj.task_id] = task_obj

    def shell(self, task_id: str, command: str, **options: Any) -> Task:
        """A task that runs ``command`` (a Jinja2 template) with ``/bin/sh -c``."""
        return Task(self, task_id, command=command, where=_caller(), **options)

    def http(
        self,
        task_id: str,
        url: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        json: Any = None,
        data: dict[str, Any] | str | None = None,
        expect_status: Any = range(200, 300),
        timeout: timedelta | float = timedelta(seconds=30),
        response_check: Callable[..., Any] | None = None,
        **options: Any,
    ) -> Task:
        """A task that sends one HTTP request; its result is the response body.

        ``url``, header values and the body are Jinja2 templates with the variables of
        shell commands; values are percent- or JSON-encoded, never spliced into the
        URL's structure (see :mod:`orchestrator.authoring.http_request`). Takes every
        task option (``retries=``, ``pool=``, ``trigger_rule=``...)::

            dag.http("notify", "http://127.0.0.1:9000/hook?day={{ ds }}", method="POST",
                     json={"run": "{{ run_id }}", "rows": "{{ params.rows }}"})
        """
        where = _caller()
        try:
            request = http_spec(
                url,
                method=method,
                headers=headers,
                json=json,
                data=data,
                expect_status=expect_status,
                timeout=timeout,
                response_check=response_check,
            )
        except (HttpSpecError, TemplateRenderError) as exc:
            raise _fail(f"task {task_id!r}: {exc}", where) from None
        return Task(
            self, task_id, http=request, response_check=response_check, where=where, **options
        )

    def param(self, name: str) -> ParamRef:
        """A param as a mapping source: ``load.expand(path=dag.param("paths"))``."""
        if name not in self.params:
            declared = ", ".join(sorted(self.params)) or "none"
            raise _fail(f"DAG {self.dag_id!r} has no param {name!r} (params: {declared})")
        return ParamRef(name)

    def task(self, fn: Callable[..., Any] | None = None, **options: Any) -> Any:
        """``@dag.task``: like :func:`task`, for a DAG not used as a context manager."""
        return _make_task_decorator(self, fn, options)

    def chain(self, *task_ids: str | Task) -> None:
        """``dag.chain("a", "b", "c")`` is ``a >> b >> c`` by id."""
        where = _caller()
        names = [t.task_id if isinstance(t, Task) else t for t in task_ids]
        for up, down in zip(names, names[1:], strict=False):
            self._pending.append((up, down, where))

    def validate(self) -> None:
        """Resolve dependencies given by id and reject unknown tasks and cycles."""
        for up, down, where in self._pending:
            for name in (up, down):
                if name not in self.tasks:
                    raise _fail(
                        f"DAG {self.dag_id!r}: dependency {up!r} >> {down!r} names unknown task {name!r}",
                        where,
                    )
            self.tasks[down].upstream_ids.add(up)
        self._pending.clear()
        graph = self.graph()
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            setup_teardown.check_dag(self)  # issue 25
            check_dag_templates(self)  # issue 25: every name a template uses exists
            return
        path = " -> ".join([edge[0] for edge in cycle] + [cycle[0][0]])
        first = self.tasks[cycle[0][0]]
        raise _fail(f"DAG {self.dag_id!r} has a cycle: {path}", (first.fileloc, first.lineno))

    def graph(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_nodes_from(self.tasks)
        for t in self.tasks.values():
            graph.add_edges_from((up, t.task_id) for up in t.upstream_ids)
        return graph

    def test(
        self,
        *,
        run_conf: dict[str, Any] | None = None,
        logical_date: datetime | None = None,
        settings: Any = None,
    ) -> Any:
        """Run every task of one run of this DAG here, on a throwaway store, printing
        each task's state, duration and result (Airflow's ``dag.test()``; the CLI's
        ``orchestrator dags test``). Returns a ``DagTestResult`` (``.state``,
        ``.tasks``, ``.exit_code``)::

            if __name__ == "__main__":
                dag.test(run_conf={"n": 3})

        ``run_conf`` is the run's conf (Airflow's name; ``--conf`` of the CLI), a naive
        ``logical_date`` is wall time in the DAG's timezone, ``settings`` default to the
        ``ORCHESTRATOR_*`` environment.
        """
        # the engine runs it: reached through importlib, as engine.services.web_ui()
        # reaches the web UI, so the authoring layer keeps importing nothing above it
        engine = importlib.import_module("orchestrator.engine.dagtest")
        return engine.test_dag(self, settings, conf=run_conf, logical_date=logical_date)

    def __repr__(self) -> str:
        return f"<DAG {self.dag_id}>"


def _make_task_decorator(
    dag: DAG | None, fn: Callable[..., Any] | None, options: dict[str, Any]
) -> Any:
    where = _caller()

    def decorate(func: Callable[..., Any]) -> Task:
        if not callable(func):
            raise _fail(f"@task needs a function, got {func!r}", where)
        owner = dag or (_active[-1] if _active else None)
        # options is not mutated: one task(...) decorator may be applied to several functions
        rest = {k: v for k, v in options.items() if k != "task_id"}
        task_id = options.get("task_id") or func.__name__
        if owner is None:
            raise _fail(f"task {task_id!r} is defined outside a DAG: use 'with DAG(...):'", where)
        return Task(owner, task_id, fn=func, where=where, **rest)

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
        made = obj if isinstance(obj, Task) else _make_task_decorator(None, obj, options)
        return setup_teardown.mark_teardown(made, [], on_failure_fail_dagrun, where)

    return mark(fn) if fn is not None else mark
