"""Sensors for DAG files (issue 15)::

    from orchestrator.sensors import external_sensor, file_sensor, time_sensor, trigger_dag

A public name kept for DAG files; the declarations live in
:mod:`orchestrator.authoring.builtin_sensors`, the checks in
:mod:`orchestrator.engine.sensor_checks` (evaluated by the worker). ``@task.sensor``
is on :func:`orchestrator.task`.
"""

from orchestrator.authoring.builtin_sensors import (
    external_sensor,
    file_sensor,
    time_sensor,
    trigger_dag,
)
from orchestrator.authoring.sensor import PokeReturnValue

__all__ = ["PokeReturnValue", "external_sensor", "file_sensor", "time_sensor", "trigger_dag"]
