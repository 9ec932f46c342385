"""A sensor's options, checked where the DAG file declares them (issue 15).

``@task.sensor`` (:mod:`orchestrator.authoring.dag`) and the built-in sensors
(:mod:`orchestrator.authoring.builtin_sensors`) call :func:`sensor_options`; what it
returns is stored with the task (``TaskSpec.sensor``, in seconds) and read back as a
:class:`orchestrator.scheduling.sensors.SensorPolicy`. A problem raises
:class:`SensorSpecError`, which the caller turns into an import error naming the
file and line.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from orchestrator.scheduling.sensors import DEFAULT_TIMEOUT, MODES

# what @task.sensor takes besides what @task takes
SENSOR_KEYS = ("poke_interval", "timeout", "mode", "exponential_backoff", "soft_fail", "max_wait")


class SensorSpecError(ValueError):
    """A sensor option is missing or wrong (the message says which and why)."""


def _seconds(name: str, value: Any, *, required: bool = False) -> float | None:
    if value is None:
        if required:
            raise SensorSpecError(
                f"a sensor needs {name} (how long to wait between pokes), e.g. "
                f"{name}=timedelta(seconds=30)"
            )
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = timedelta(seconds=value)
    if not isinstance(value, timedelta):
        raise SensorSpecError(f"{name} must be a timedelta or a number of seconds, got {value!r}")
    return value.total_seconds()


def sensor_options(
    *,
    poke_interval: Any = None,
    timeout: Any = None,
    mode: Any = "reschedule",
    exponential_backoff: Any = False,
    soft_fail: Any = False,
    max_wait: Any = None,
    modes: tuple[str, ...] = MODES,
) -> dict[str, Any]:
    """The stored form of a sensor's options; SensorSpecError if one is wrong."""
    interval = _seconds("poke_interval", poke_interval, required=True)
    assert interval is not None
    if interval <= 0:
        raise SensorSpecError(f"poke_interval must be positive, got {poke_interval!r}")
    limit = _seconds("timeout", timeout)
    if limit is None:
        limit = DEFAULT_TIMEOUT.total_seconds()
    if limit < interval:
        raise SensorSpecError(
            f"timeout ({timedelta(seconds=limit)}) is shorter than poke_interval "
            f"({timedelta(seconds=interval)}): the sensor could poke at most once"
        )
    if mode not in modes:
        raise SensorSpecError(f"mode must be one of {', '.join(map(repr, modes))}, got {mode!r}")
    for name, value in (("exponential_backoff", exponential_backoff), ("soft_fail", soft_fail)):
        if not isinstance(value, bool):
            raise SensorSpecError(f"{name} must be True or False, got {value!r}")
    wait = _seconds("max_wait", max_wait)
    if wait is not None and wait < interval:
        raise SensorSpecError(
            f"max_wait ({timedelta(seconds=wait)}) is shorter than poke_interval "
            f"({timedelta(seconds=interval)})"
        )
    out: dict[str, Any] = {"poke_interval": interval, "timeout": limit, "mode": mode}
    if exponential_backoff:
        out["exponential_backoff"] = True
    if soft_fail:
        out["soft_fail"] = True
    if wait is not None:
        out["max_wait"] = wait
    return out


def split_sensor_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``@task.sensor``'s keyword arguments as (sensor options, task options).

    A sensor's ``timeout`` is how long it may wait in all (Airflow's meaning); the
    time limit of one try is ``execution_timeout`` (the task option ``timeout``).
    """
    sensor = {k: options[k] for k in SENSOR_KEYS if k in options}
    rest = {k: v for k, v in options.items() if k not in SENSOR_KEYS}
    if "execution_timeout" in rest:
        rest["timeout"] = rest.pop("execution_timeout")
    return sensor, rest


class PokeReturnValue:
    """What a sensor may return instead of a plain truthy/falsy value (Airflow's name):
    ``is_done`` says whether the condition is met, ``xcom_value`` is its result.

    >>> PokeReturnValue(True, {"rows": 3})           # doctest: +SKIP
    """

    def __init__(self, is_done: bool, xcom_value: Any = None) -> None:
        self.is_done = bool(is_done)
        self.xcom_value = xcom_value

    def __repr__(self) -> str:
        return f"PokeReturnValue(is_done={self.is_done!r}, xcom_value={self.xcom_value!r})"


def poke_result(value: Any) -> tuple[bool, Any]:
    """(done, result) from what a sensor's function returned."""
    if isinstance(value, PokeReturnValue):
        return value.is_done, value.xcom_value if value.is_done else None
    return bool(value), value if value else None
