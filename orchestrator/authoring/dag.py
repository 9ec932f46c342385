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

The pieces live beside it: the task (``task_node.py``), ``@task`` and its kinds
(``decorators.py``), what a file is building now (``building.py``) and the shared option
checks (``option_checks.py``); this module keeps the DAG and re-exports their names, so
``orchestrator.authoring.dag`` still offers everything it did.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import networkx as nx

from orchestrator.authoring import map_index_template, setup_teardown, task_controls, taskflow
from orchestrator.authoring.alerts import alert_options
from orchestrator.authoring.assets import (  # Asset... re-exported: orchestrator's names
    Asset,  # noqa: F401
    AssetOrTimeSchedule,  # noqa: F401
    split_schedule,
)
from orchestrator.authoring.building import (  # noqa: F401 - re-exported (loader, task_group)
    _active,
    _created,
    _current_group,
    _groups,
    _loading,
)
from orchestrator.authoring.dag_vocabulary import (
    dag_decorator,
    misfire_of,
    own_names,
    split_default_args,
)
from orchestrator.authoring.decorators import (  # noqa: F401 - public: orchestrator.task...
    _make_task_decorator,
    setup,
    task,
    teardown,
)
from orchestrator.authoring.http_request import HttpSpecError, http_spec
from orchestrator.authoring.mapped import ParamRef
from orchestrator.authoring.option_checks import (  # noqa: F401 - re-exported (sensors, groups)
    ID_PATTERN,
    ID_RULE,
    _as_timedelta,
    _aware,
    _check_id,
    _lost_bound,
    _search_path,
)
from orchestrator.authoring.params import Param  # noqa: F401 - public: orchestrator.Param
from orchestrator.authoring.params import declare as declare_params
from orchestrator.authoring.sensor import (  # issue 15
    PokeReturnValue,  # noqa: F401 - public: orchestrator.PokeReturnValue
)
from orchestrator.authoring.task_node import Task
from orchestrator.authoring.task_templates import check_dag_templates
from orchestrator.authoring.template_check import user_templates
from orchestrator.authoring.templating import TemplateRenderError
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.scheduling.asset_conditions import AssetAll, AssetAny  # noqa: F401
from orchestrator.scheduling.schedule import Schedule, ScheduleError, parse_schedule

MISFIRE_POLICIES = ("backfill", "coalesce", "skip")
OVERLAP_POLICIES = ("queue", "skip", "allow", "replace", "buffer_one")


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
        misfire: str | None = None,  # "coalesce" unless catchup=True says "backfill"
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
        # issue 25: Airflow's vocabulary (authoring/dag_vocabulary.py)
        default_args: dict[str, Any] | None = None,
        catchup: bool | None = None,
        doc_md: str | None = None,
        render_template_as_native_obj: bool = False,
        strict_conf: bool = False,  # issue 26: refuse conf keys that are not params
    ) -> None:
        where = _caller()
        self.fileloc, self.lineno = where
        self.dag_id = _check_id("dag_id", dag_id, where)
        self.description = description
        if doc_md is not None and not isinstance(doc_md, str):
            raise _fail(f"DAG {dag_id!r}: doc_md must be a string (Markdown)", where)
        self.doc_md = doc_md
        if not isinstance(render_template_as_native_obj, bool):
            raise _fail(f"DAG {dag_id!r}: render_template_as_native_obj must be True or False")
        # issue 25: a JSON value's template renders to a Python literal's value (http_request)
        self.render_template_as_native_obj = render_template_as_native_obj
        if not isinstance(strict_conf, bool):
            raise _fail(f"DAG {dag_id!r}: strict_conf must be True or False", where)
        self.strict_conf = strict_conf
        # options every task gets unless it gives its own; start/end dates as fallbacks
        self.task_defaults, fallbacks = split_default_args(default_args, dag_id, where)
        start_date = start_date if start_date is not None else fallbacks.get("start_date")
        end_date = end_date if end_date is not None else fallbacks.get("end_date")
        misfire = misfire_of(catchup, misfire, dag_id, where)
        self.tags = [str(t) for t in tags]
        self.timezone = timezone or "UTC"
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            raise _fail(f"DAG {dag_id!r}: unknown timezone {self.timezone!r}", where) from None
        self.start_date = _aware(dag_id, "start_date", start_date, zone, where)
        self.end_date = _aware(dag_id, "end_date", end_date, zone, where)
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
        where = _caller()
        options = {**self.task_defaults, **own_names(options, task_id, where)}
        return Task(self, task_id, command=command, where=where, **options)

    @property
    def owners(self) -> list[str]:
        """The owners of its tasks (``owner=``, or default_args' ``owner``), sorted."""
        return sorted({t.owner for t in self.tasks.values() if t.owner})

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
        if self.render_template_as_native_obj:  # issue 25: json/data values native
            request["native"] = True
        options = {**self.task_defaults, **own_names(options, task_id, where)}
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
        taskflow.drop_templates(self)  # issue 25: tasks only copied from by calls
        taskflow.check_parameters(self)  # issue 25: context by parameter name
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
            map_index_template.check_dag(self)  # issue 25 item 7
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


def dag(dag_id: Any = None, **options: Any) -> Any:
    """``@dag(...)`` (Airflow's): calling the decorated function builds a DAG with its
    name as dag_id and its parameters as params; see
    :mod:`orchestrator.authoring.dag_vocabulary`::

        @dag(schedule=None, default_args={"retries": 2})
        def etl(limit=100):
            ...
        etl()
    """
    return dag_decorator(DAG, dag_id, options)
