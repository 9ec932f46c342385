"""The built-in sensors and triggering another DAG (issue 15), for DAG files:
``from orchestrator.sensors import file_sensor, time_sensor, external_sensor, trigger_dag``.

Each declares a task in the current DAG whose condition is a declarative check
(``Task.check``) that the worker evaluates itself (``engine/sensor_checks.py``):
no task process, no database address handed to a task. They wait in reschedule
mode (``up_for_reschedule`` between pokes, no worker slot) and take every task
option (``retries=``, ``pool=``, ``trigger_rule=``...) and the sensor options
``poke_interval``, ``timeout``, ``exponential_backoff``, ``max_wait``, ``soft_fail``::

    wait = file_sensor("partner_file", "/data/partner/{{ ds }}/*.csv", min_size=1,
                       poke_interval=timedelta(seconds=30), timeout=timedelta(hours=6))
    ready = external_sensor("sales_loaded", "ingest_sales", "load")
    kick = trigger_dag("start_report", "sales_report", conf={"day": "x"})
"""

from __future__ import annotations

from datetime import time, timedelta
from typing import Any

from orchestrator.authoring.dag import ID_PATTERN, ID_RULE, Task, _active, _caller, _fail
from orchestrator.authoring.sensor import SENSOR_KEYS, split_sensor_options
from orchestrator.authoring.templating import TemplateRenderError, check_template
from orchestrator.states import RunState, TaskState

DEFAULT_POKE = timedelta(seconds=60)
TASK_STATES = tuple(s.value for s in TaskState)
RUN_STATES = tuple(s.value for s in RunState)


def _declare(task_id: str, check: dict[str, Any], options: dict[str, Any], where: Any) -> Task:
    if not _active:
        raise _fail(f"sensor {task_id!r} is defined outside a DAG: use 'with DAG(...):'", where)
    if options.get("mode", "reschedule") != "reschedule":
        raise _fail(
            f"sensor {task_id!r}: built-in sensors are checked by the worker and wait in "
            f"mode='reschedule' only, got mode={options['mode']!r}",
            where,
        )
    sensor, rest = split_sensor_options(options)
    sensor.setdefault("poke_interval", DEFAULT_POKE)
    rest = {**getattr(_active[-1], "task_defaults", {}), **rest}  # DAG default_args
    return Task(_active[-1], task_id, check=check, sensor=sensor, where=where, **rest)


def _seconds(task_id: str, name: str, value: Any, where: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = timedelta(seconds=value)
    if not isinstance(value, timedelta):
        raise _fail(f"sensor {task_id!r}: {name} must be a timedelta or seconds, got {value!r}",
                    where)  # fmt: skip
    return value.total_seconds()


def _states(task_id: str, name: str, value: Any, known: tuple[str, ...], where: Any) -> list[str]:
    states = [value] if isinstance(value, str) else list(value or ())
    bad = [s for s in states if s not in known]
    if bad:
        raise _fail(
            f"sensor {task_id!r}: {name} has unknown state(s) {', '.join(map(repr, bad))} "
            f"(one of: {', '.join(known)})",
            where,
        )
    return states


def _check_states(task_id: str, allowed: list[str], failed: list[str], where: Any) -> None:
    both = sorted(set(allowed) & set(failed))
    if both:
        raise _fail(f"sensor {task_id!r}: {', '.join(both)} is in both allowed_states and "
                    "failed_states", where)  # fmt: skip
    if not allowed:
        raise _fail(f"sensor {task_id!r}: allowed_states is empty", where)


def file_sensor(
    task_id: str,
    filepath: str,
    *,
    min_size: int | None = None,
    min_age: timedelta | float | None = None,
    recursive: bool = False,
    **options: Any,
) -> Task:
    """Wait until a file matching ``filepath`` exists (Airflow's FileSensor).

    ``filepath`` is a glob (``**`` with ``recursive=True``) and a Jinja2 template of
    the shell variables (``{{ ds }}``...); relative to the DAG file's folder unless
    absolute. ``min_size`` (bytes) and ``min_age`` (since its last change) skip
    files still being written. The result is the list of matching paths.
    """
    where = _caller()
    if not isinstance(filepath, str) or not filepath.strip():
        raise _fail(f"sensor {task_id!r}: filepath must be a non-empty string", where)
    try:
        check_template(filepath)
    except TemplateRenderError as exc:
        raise _fail(f"sensor {task_id!r}: {exc}", where) from None
    if min_size is not None and (not isinstance(min_size, int) or isinstance(min_size, bool)
                                 or min_size < 0):  # fmt: skip
        raise _fail(f"sensor {task_id!r}: min_size must be an integer >= 0 (bytes)", where)
    age = _seconds(task_id, "min_age", min_age, where)
    check = {"type": "file", "filepath": filepath, "min_size": min_size, "min_age": age,
             "recursive": bool(recursive)}  # fmt: skip
    return _declare(task_id, check, options, where)


def time_sensor(
    task_id: str,
    *,
    target_time: time | str | None = None,
    delta: timedelta | float | None = None,
    **options: Any,
) -> Task:
    """Wait until a time of day (``target_time``, in the DAG's timezone, on the day its
    data interval ends: Airflow's TimeSensor) or ``delta`` after the data interval's
    end (TimeDeltaSensor). It pokes at the target itself, not a poke_interval later."""
    where = _caller()
    if (target_time is None) == (delta is None):
        raise _fail(f"sensor {task_id!r}: give exactly one of target_time and delta", where)
    check: dict[str, Any] = {"type": "time"}
    if target_time is not None:
        try:
            value = target_time if isinstance(target_time, time) else time.fromisoformat(
                target_time)  # fmt: skip
        except (TypeError, ValueError):
            raise _fail(f"sensor {task_id!r}: target_time must be a time or 'HH:MM[:SS]', got "
                        f"{target_time!r}", where) from None  # fmt: skip
        if value.tzinfo is not None:
            raise _fail(f"sensor {task_id!r}: target_time is read in the DAG's timezone; "
                        "give it without tzinfo", where)  # fmt: skip
        check["target_time"] = value.isoformat()
    else:
        check["delta"] = _seconds(task_id, "delta", delta, where)
    return _declare(task_id, check, options, where)


def external_sensor(
    task_id: str,
    external_dag_id: str,
    external_task_id: str | None = None,
    *,
    execution_delta: timedelta | float | None = None,
    allowed_states: Any = None,
    failed_states: Any = None,
    **options: Any,
) -> Task:
    """Wait for a task (or, without ``external_task_id``, the whole run) of another DAG
    at this run's logical date minus ``execution_delta`` (Airflow's
    ExternalTaskSensor). Met when it is in ``allowed_states`` (``["success"]``); fails
    at once, without waiting longer, when it is in ``failed_states`` (``["failed",
    "upstream_failed"]`` for a task, ``["failed"]`` for a run)."""
    where = _caller()
    for name, value in (
        ("external_dag_id", external_dag_id),
        ("external_task_id", external_task_id),
    ):
        if value is not None and (not isinstance(value, str) or not ID_PATTERN.fullmatch(value)):
            raise _fail(f"sensor {task_id!r}: invalid {name} {value!r}: an id is {ID_RULE}", where)
    known = TASK_STATES if external_task_id else RUN_STATES
    default_failed = ["failed", "upstream_failed"] if external_task_id else ["failed"]
    allowed = _states(task_id, "allowed_states", allowed_states or ["success"], known, where)
    failed = _states(task_id, "failed_states",
                     default_failed if failed_states is None else failed_states, known, where)  # fmt: skip
    _check_states(task_id, allowed, failed, where)
    check = {"type": "external", "external_dag_id": external_dag_id,
             "external_task_id": external_task_id,
             "execution_delta": _seconds(task_id, "execution_delta", execution_delta, where),
             "allowed_states": allowed, "failed_states": failed}  # fmt: skip
    return _declare(task_id, check, options, where)


def trigger_dag(
    task_id: str,
    trigger_dag_id: str,
    *,
    conf: dict[str, Any] | None = None,
    wait_for_completion: bool = False,
    allowed_states: Any = None,
    failed_states: Any = None,
    allow_self_trigger: bool = False,
    reset_dag_run: bool = False,
    **options: Any,
) -> Task:
    """Create a run of DAG ``trigger_dag_id`` with ``conf`` (Airflow's
    TriggerDagRunOperator), at this run's logical date, exactly once: its run id
    derives from this task instance, so a retried trigger finds the run it made.
    With ``wait_for_completion`` it then waits (reschedule mode, every
    ``poke_interval``) until the run is in ``allowed_states`` (``["success"]``), and
    fails when it is in ``failed_states`` (``["failed"]``). The result is
    ``{"dag_id": ..., "run_id": ...}``.

    With ``reset_dag_run`` (Airflow's), a try that finds the run its task instance made
    already finished (the task was cleared, or retried) clears that run so it runs
    again, once per try; a run still going is waited on, not reset.

    A DAG that triggers itself is refused at parse time unless ``allow_self_trigger``
    says so; every chain of triggered runs stops at the ``max_trigger_depth`` setting
    (the task that would pass it fails, naming the chain)."""
    where = _caller()
    if not isinstance(trigger_dag_id, str) or not ID_PATTERN.fullmatch(trigger_dag_id):
        raise _fail(f"task {task_id!r}: invalid trigger_dag_id {trigger_dag_id!r}: an id is "
                    f"{ID_RULE}", where)  # fmt: skip
    if _active and _active[-1].dag_id == trigger_dag_id and allow_self_trigger is not True:
        raise _fail(
            f"task {task_id!r}: DAG {trigger_dag_id!r} triggers itself (each run would "
            "start another); pass allow_self_trigger=True if that is meant (chains stop at "
            "max_trigger_depth)",
            where,
        )
    if conf is not None and not isinstance(conf, dict):
        raise _fail(f"task {task_id!r}: conf must be a dict, got {type(conf).__name__}", where)
    import json

    try:
        json.dumps(conf or {})
    except (TypeError, ValueError) as exc:
        raise _fail(f"task {task_id!r}: conf must be JSON-serialisable: {exc}", where) from None
    allowed = _states(task_id, "allowed_states", allowed_states or ["success"], RUN_STATES, where)
    failed = _states(task_id, "failed_states", failed_states or ["failed"], RUN_STATES, where)
    _check_states(task_id, allowed, failed, where)
    check = {"type": "trigger", "trigger_dag_id": trigger_dag_id, "conf": conf or {},
             "wait_for_completion": bool(wait_for_completion), "allowed_states": allowed,
             "failed_states": failed}  # fmt: skip
    if not isinstance(reset_dag_run, bool):
        raise _fail(f"task {task_id!r}: reset_dag_run must be True or False", where)
    if reset_dag_run:  # only when set: a DAG that does not use it keeps its version hash
        check["reset_dag_run"] = True
    if _active and getattr(_active[-1], "render_template_as_native_obj", False):
        check["native"] = True  # issue 25: the conf's templates render to literals' values
    if not wait_for_completion:  # one poke creates the run and succeeds
        options = {k: v for k, v in options.items() if k not in SENSOR_KEYS or k == "mode"}
    return _declare(task_id, check, options, where)
