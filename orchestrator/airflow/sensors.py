"""Airflow's sensors over ours: ``FileSensor``, ``ExternalTaskSensor``,
``TimeDeltaSensor`` and ``TimeSensor`` are our built-in sensors (checked by the worker,
waiting slot-free between pokes whatever ``mode`` says); ``PythonSensor``,
``HttpSensor``, ``DateTimeSensor`` and custom ``BaseSensorOperator`` subclasses
(``poke(self, context)``) are Python sensors in ``mode="poke"`` (the default, as in
Airflow: one try loops) or ``"reschedule"`` / ``deferrable=True`` (a poke per claim,
no slot held between)::

    from orchestrator.airflow import ExternalTaskSensor, FileSensor, PythonSensor

    land = FileSensor(task_id="land", filepath="/data/{{ ds }}/*.csv", poke_interval=30,
                      timeout=3600, mode="reschedule", soft_fail=True)
    up = ExternalTaskSensor(task_id="up", external_dag_id="ingest", external_task_id="load")
    ok = PythonSensor(task_id="ok", python_callable=lambda: True, poke_interval=5)

``timeout`` (7 days by default) is the whole wait; past it the sensor fails without
retry (``AirflowSensorTimeout``), or is skipped with ``soft_fail=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Any

from orchestrator.airflow import runtime
from orchestrator.airflow.exceptions import AirflowException
from orchestrator.airflow.operators import BaseOperator
from orchestrator.airflow.remote import http_request
from orchestrator.authoring import builtin_sensors
from orchestrator.authoring.building import _active
from orchestrator.authoring.sensor import sensor_options
from orchestrator.authoring.task_node import Task
from orchestrator.authoring.where import caller, definition_error

__all__ = [
    "BaseSensorOperator",
    "DateTimeSensor",
    "ExternalTaskSensor",
    "FileSensor",
    "HttpSensor",
    "PythonSensor",
    "TimeDeltaSensor",
    "TimeSensor",
]

SENSOR_ARGS = frozenset(
    {"poke_interval", "timeout", "mode", "soft_fail", "exponential_backoff", "max_wait",
     "deferrable", "silent_fail", "never_fail"}
)  # fmt: skip


def _seconds(value: Any) -> Any:
    return value.total_seconds() if isinstance(value, timedelta) else value


def _fit_interval(sensor: dict[str, Any]) -> dict[str, Any]:
    """A timeout shorter than poke_interval (Airflow allows it: one poke, then the
    timeout) pokes at the timeout here."""
    interval, timeout = _seconds(sensor.get("poke_interval")), _seconds(sensor.get("timeout"))
    numbers = all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in (interval, timeout)
    )
    if numbers and 0 < timeout < interval:
        sensor["poke_interval"] = timeout
    return sensor


class BaseSensorOperator(BaseOperator):
    """Airflow's ``BaseSensorOperator``: subclass it with ``poke(self, context)``
    returning a truthy value (or a :class:`PokeReturnValue`) once its condition holds.

    >>> class Ready(BaseSensorOperator):                    # doctest: +SKIP
    ...     def poke(self, context):
    ...         return os.path.exists("/tmp/ready")
    """

    own_args = SENSOR_ARGS

    def __init__(
        self,
        *,
        poke_interval: float | timedelta = 60,
        timeout: float | timedelta = timedelta(days=7),
        mode: str = "poke",
        soft_fail: bool = False,
        exponential_backoff: bool = False,
        max_wait: float | timedelta | None = None,
        deferrable: bool = False,
        silent_fail: bool = False,
        never_fail: bool = False,
        **kwargs: Any,
    ) -> None:
        where = caller()
        for name, value in (("silent_fail", silent_fail), ("never_fail", never_fail)):
            if value:
                raise definition_error(
                    f"{type(self).__name__} {kwargs.get('task_id')!r}: {name}= is not "
                    "supported here: use soft_fail=True (skipped on timeout) or catch the "
                    "error in poke()",
                    where,
                )
        if deferrable is True:
            mode = "reschedule"  # slot-free between pokes: what deferring buys in Airflow
        self.sensor = {
            "poke_interval": poke_interval, "timeout": timeout, "mode": mode,
            "soft_fail": soft_fail, "exponential_backoff": exponential_backoff,
            "max_wait": max_wait,
        }  # fmt: skip
        _fit_interval(self.sensor)
        super().__init__(**kwargs)

    def _declare(self, dag: Any, task_id: str, options: dict[str, Any], where: Any) -> Task:
        made = Task(dag, task_id, fn=self._run, sensor=self.sensor, where=where, **options)
        self._wire_references(made, where)
        return made

    def execute(self, context: dict[str, Any]) -> Any:
        return self.poke(context)

    def poke(self, context: dict[str, Any]) -> Any:
        """One check of the condition (override it)."""
        raise NotImplementedError(f"{type(self).__name__} must define poke(self, context)")


class PythonSensor(BaseSensorOperator):
    """Airflow's ``PythonSensor(python_callable=..., op_args=..., op_kwargs=...)``.

    >>> PythonSensor(task_id="ready", python_callable=is_ready, poke_interval=30)  # doctest: +SKIP
    """

    template_fields = ("templates_dict", "op_args", "op_kwargs")
    own_args = SENSOR_ARGS | {"python_callable", "op_args", "op_kwargs", "templates_dict"}

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any],
        op_args: Sequence[Any] | None = None,
        op_kwargs: dict[str, Any] | None = None,
        templates_dict: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not callable(python_callable):
            raise definition_error(
                f"PythonSensor {kwargs.get('task_id')!r}: python_callable= must be a function"
            )
        self.python_callable = python_callable
        self.op_args, self.op_kwargs = list(op_args or ()), dict(op_kwargs or {})
        self.templates_dict = templates_dict
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> Any:
        context = {**context, "templates_dict": self.templates_dict}
        args, kwargs = tuple(self.op_args or ()), dict(self.op_kwargs or {})
        return runtime.call_with_context(self.python_callable, args, kwargs, context)


class HttpSensor(BaseSensorOperator):
    """Airflow's ``HttpSensor(http_conn_id=..., endpoint=..., response_check=...)``: met
    when the response is not an error (a 404 is "not yet") and ``response_check``
    holds.

    >>> HttpSensor(task_id="up", http_conn_id="api", endpoint="health")  # doctest: +SKIP
    """

    template_fields = ("request_params", "headers")  # endpoint: rendered as a URL's part
    own_args = SENSOR_ARGS | {
        "http_conn_id", "endpoint", "method", "request_params", "headers",
        "response_check", "extra_options",
    }  # fmt: skip

    def __init__(
        self,
        *,
        endpoint: str,
        http_conn_id: str = "http_default",
        method: str = "GET",
        request_params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        response_check: Callable[..., Any] | None = None,
        extra_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.endpoint, self.http_conn_id, self.method = endpoint, http_conn_id, method
        self.request_params, self.headers = request_params, headers
        self.response_check, self.extra_options = response_check, extra_options
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> Any:
        response = http_request(
            self.http_conn_id, self.endpoint, self.method, self.request_params, self.headers,
            self.extra_options,
        )  # fmt: skip
        if response.status_code == 404:
            return False
        if response.status_code >= 400:
            from orchestrator.airflow.exceptions import AirflowException

            raise AirflowException(f"{response.status_code}:{response.reason}")
        if self.response_check is not None:
            return bool(runtime.call_with_context(self.response_check, (response,), {}, context))
        return True


class DateTimeSensor(BaseSensorOperator):
    """Airflow's ``DateTimeSensor(target_time=...)``: met once now is past
    ``target_time`` (a datetime, or a template such as
    ``"{{ data_interval_end + macros.timedelta(hours=1) }}"``; naive: UTC).

    >>> DateTimeSensor(task_id="at", target_time="{{ data_interval_end }}")  # doctest: +SKIP
    """

    template_fields = ("target_time",)
    own_args = SENSOR_ARGS | {"target_time"}

    def __init__(self, *, target_time: str | datetime, **kwargs: Any) -> None:
        if not isinstance(target_time, str | datetime):
            raise definition_error(
                f"DateTimeSensor {kwargs.get('task_id')!r}: target_time must be a datetime "
                f"or a template string, got {target_time!r}"
            )
        self.target_time = target_time.isoformat() if isinstance(target_time, datetime) else (
            target_time)  # fmt: skip
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> bool:
        target = datetime.fromisoformat(str(self.target_time))
        if target.tzinfo is None:
            target = target.replace(tzinfo=UTC)
        now = datetime.now(UTC)
        context["ti"].log.info("waiting until %s (now %s)", target.isoformat(), now.isoformat())
        return now >= target


class _BuiltIn(BaseOperator):
    """A sensor over one of our built-in ones (checked by the worker, slot-free)."""

    own_args = SENSOR_ARGS
    builtin: Callable[..., Task]

    def __init__(self, **kwargs: Any) -> None:
        where = caller()
        sensor = {k: kwargs.pop(k) for k in list(kwargs) if k in SENSOR_ARGS}
        for name in ("silent_fail", "never_fail"):
            if sensor.pop(name, False):
                raise definition_error(
                    f"{type(self).__name__} {kwargs.get('task_id')!r}: {name}= is not "
                    "supported here: use soft_fail=True",
                    where,
                )
        sensor.pop("deferrable", None)  # built-in sensors wait slot-free anyway
        sensor.pop("mode", None)  # "poke" too: the worker checks, no slot is held
        sensor.setdefault("poke_interval", 60)
        _fit_interval(sensor)
        try:  # checked here, so a mistake names this line
            sensor_options(**{k: _seconds(v) for k, v in sensor.items()})
        except (ValueError, TypeError) as exc:
            raise definition_error(f"{type(self).__name__} {kwargs.get('task_id')!r}: {exc}",
                                   where) from None  # fmt: skip
        self.sensor = sensor
        super().__init__(**kwargs)

    def _declare(self, dag: Any, task_id: str, options: dict[str, Any], where: Any) -> Task:
        if "timeout" in options:  # a try's time limit; a sensor's timeout is its wait
            options = dict(options)
            options["execution_timeout"] = options.pop("timeout")
        _active.append(dag)
        try:
            return self.declare_builtin(task_id, {**options, **self.sensor})
        finally:
            _active.pop()

    def declare_builtin(self, task_id: str, options: dict[str, Any]) -> Task:
        raise NotImplementedError


class FileSensor(_BuiltIn):
    """Airflow's ``FileSensor(filepath=..., recursive=...)``: a glob, templated;
    relative paths are read from the DAG file's folder.

    >>> FileSensor(task_id="land", filepath="/data/{{ ds }}/*.csv")  # doctest: +SKIP
    """

    own_args = SENSOR_ARGS | {"filepath", "fs_conn_id", "recursive"}

    def __init__(
        self, *, filepath: str, fs_conn_id: str = "fs_default", recursive: bool = False,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        if fs_conn_id != "fs_default":
            raise definition_error(
                f"FileSensor {kwargs.get('task_id')!r}: fs_conn_id={fs_conn_id!r} is not "
                "supported here: the worker checks the path at parse-free speed without "
                "credentials; give the whole path in filepath="
            )
        self.filepath, self.recursive = filepath, recursive
        super().__init__(**kwargs)

    def declare_builtin(self, task_id: str, options: dict[str, Any]) -> Task:
        return builtin_sensors.file_sensor(
            task_id, self.filepath, recursive=self.recursive, **options
        )


class ExternalTaskSensor(_BuiltIn):
    """Airflow's ``ExternalTaskSensor(external_dag_id=..., external_task_id=...,
    allowed_states=..., failed_states=..., execution_delta=...)``; with
    ``execution_date_fn`` it is an :class:`ExternalTaskSensorByFunction`.

    >>> ExternalTaskSensor(task_id="up", external_dag_id="ingest")  # doctest: +SKIP
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("execution_date_fn") is not None:
            return ExternalTaskSensorByFunction(*args, **kwargs)
        return super().__new__(cls)

    own_args = SENSOR_ARGS | {
        "external_dag_id", "external_task_id", "external_task_ids", "allowed_states",
        "failed_states", "execution_delta", "execution_date_fn", "check_existence",
        "skipped_states", "external_task_group_id",
    }  # fmt: skip

    def __init__(
        self,
        *,
        external_dag_id: str,
        external_task_id: str | None = None,
        external_task_ids: Sequence[str] | None = None,
        allowed_states: Any = None,
        failed_states: Any = None,
        execution_delta: timedelta | None = None,
        execution_date_fn: Any = None,
        check_existence: bool = False,
        skipped_states: Any = None,
        external_task_group_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        where = caller()
        refused = {
            "skipped_states": (skipped_states, "give the states to wait for in allowed_states"),
            "external_task_group_id": (external_task_group_id, "wait for the group's last "
                                       "task with external_task_id='group.task'"),
        }  # fmt: skip
        for name, (value, why) in refused.items():
            if value:
                raise definition_error(
                    f"ExternalTaskSensor {kwargs.get('task_id')!r}: {name}= is not supported "
                    f"here: {why}",
                    where,
                )
        if external_task_ids is not None:
            ids = list(external_task_ids)
            if len(ids) != 1 or external_task_id is not None:
                raise definition_error(
                    f"ExternalTaskSensor {kwargs.get('task_id')!r}: external_task_ids= with "
                    "more than one task is not supported here: one sensor per task",
                    where,
                )
            external_task_id = ids[0]
        self.external = {
            "external_task_id": external_task_id, "allowed_states": allowed_states,
            "failed_states": failed_states, "execution_delta": execution_delta,
        }  # fmt: skip
        self.external_dag_id = external_dag_id
        super().__init__(**kwargs)  # check_existence: a run not there yet is waited for

    def declare_builtin(self, task_id: str, options: dict[str, Any]) -> Task:
        ext = self.external
        return builtin_sensors.external_sensor(
            task_id, self.external_dag_id, ext["external_task_id"],
            execution_delta=ext["execution_delta"], allowed_states=ext["allowed_states"],
            failed_states=ext["failed_states"], **options,
        )  # fmt: skip


class ExternalTaskSensorByFunction(BaseSensorOperator):
    """``ExternalTaskSensor(..., execution_date_fn=fn)`` (issue 26): ``fn(logical_date,
    **context)`` (the context names it takes) gives the external run's logical date, or
    a list of them; each poke asks the worker for those runs' (or their task's) states.
    Met when every one is in ``allowed_states``; a failure, naming the run, when one is
    in ``failed_states`` (skipped with ``soft_fail``)."""

    own_args = SENSOR_ARGS | {
        "external_dag_id", "external_task_id", "external_task_ids", "allowed_states",
        "failed_states", "execution_date_fn", "check_existence",
    }  # fmt: skip

    def __init__(
        self,
        *,
        external_dag_id: str,
        execution_date_fn: Callable[..., Any],
        external_task_id: str | None = None,
        external_task_ids: Sequence[str] | None = None,
        allowed_states: Any = None,
        failed_states: Any = None,
        check_existence: bool = False,
        **kwargs: Any,
    ) -> None:
        where = caller()
        name = f"ExternalTaskSensor {kwargs.get('task_id')!r}"
        if not callable(execution_date_fn):
            raise definition_error(f"{name}: execution_date_fn= must be a function", where)
        if external_task_ids is not None:
            ids = list(external_task_ids)
            if len(ids) != 1 or external_task_id is not None:
                raise definition_error(
                    f"{name}: external_task_ids= with more than one task is not supported "
                    "here: one sensor per task",
                    where,
                )
            external_task_id = ids[0]
        for label, states in (("allowed_states", allowed_states), ("failed_states", failed_states)):
            if states is not None and not (
                isinstance(states, list | tuple) and all(isinstance(x, str) for x in states)
            ):
                raise definition_error(f"{name}: {label}= must be a list of states", where)
        self.external_dag_id = external_dag_id
        self.external_task_id = external_task_id
        self.execution_date_fn = execution_date_fn
        self.allowed_states = list(allowed_states or ["success"])
        self.failed_states = list(failed_states or [])
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> bool:
        logical_date = context["logical_date"]
        extra = {k: v for k, v in context.items() if k != "logical_date"}
        extra["context"] = context  # Airflow passes it too, for older functions
        dates = runtime.call_with_context(self.execution_date_fn, (logical_date,), {}, extra)
        dates = dates if isinstance(dates, list | tuple) else [dates]
        ctx, _ = runtime.running()
        what = self.external_dag_id + (f".{self.external_task_id}" if self.external_task_id else "")
        states = []
        for when in dates:
            if not isinstance(when, datetime) or when.tzinfo is None:
                raise TypeError(
                    f"ExternalTaskSensor {self.task_id!r}: execution_date_fn returned "
                    f"{when!r}, not an aware datetime (or a list of them)"
                )
            asked = {"dag_id": self.external_dag_id, "task_id": self.external_task_id,
                     "logical_date": when.isoformat()}  # fmt: skip
            found = ctx._ask("external_state", asked)
            if found is None:
                return False  # no run at that date yet
            run_id, state = found.split("\n", 1)
            if state == "missing":
                raise AirflowException(f"run {run_id} of DAG {self.external_dag_id} has no "
                                       f"task {self.external_task_id!r}")  # fmt: skip
            if state in self.failed_states:
                raise AirflowException(f"{what} is {state} in {run_id} (failed_states)")
            states.append(state)
        return all(state in self.allowed_states for state in states)


class TimeDeltaSensor(_BuiltIn):
    """Airflow's ``TimeDeltaSensor(delta=...)``: ``delta`` after the data interval's end.

    >>> TimeDeltaSensor(task_id="settle", delta=timedelta(minutes=5))  # doctest: +SKIP
    """

    own_args = SENSOR_ARGS | {"delta"}

    def __init__(self, *, delta: timedelta, **kwargs: Any) -> None:
        self.delta = delta
        super().__init__(**kwargs)

    def declare_builtin(self, task_id: str, options: dict[str, Any]) -> Task:
        return builtin_sensors.time_sensor(task_id, delta=self.delta, **options)


class TimeSensor(_BuiltIn):
    """Airflow's ``TimeSensor(target_time=time(...))``: that time of day, in the DAG's
    timezone, on the day the data interval ends.

    >>> TimeSensor(task_id="six", target_time=time(6, 0))  # doctest: +SKIP
    """

    own_args = SENSOR_ARGS | {"target_time"}

    def __init__(self, *, target_time: time | str, **kwargs: Any) -> None:
        self.target_time = target_time
        super().__init__(**kwargs)

    def declare_builtin(self, task_id: str, options: dict[str, Any]) -> Task:
        return builtin_sensors.time_sensor(task_id, target_time=self.target_time, **options)
