"""Airflow 3's names over our own features (issue 26): a DAG file written for Airflow
runs here after only its import lines change::

    # from airflow.sdk import DAG, task
    # from airflow.providers.standard.operators.bash import BashOperator
    from orchestrator.airflow import DAG, BashOperator, task

Every name is a thin adapter over an orchestrator feature (no second engine): the
``airflow.sdk`` names (:mod:`.sdk`, :mod:`.decorators`, :mod:`.hooks`), the exceptions
(:mod:`.exceptions`), the operators (:mod:`.operators`, :mod:`.bash`, :mod:`.remote`,
:mod:`.virtualenv`)
and the sensors (:mod:`.sensors`). An argument we do not support is an import error
naming the file:line, the argument and what to write instead. docs/porting.md lists
every name: supported as-is, with a difference, or not (and the alternative).
"""

from orchestrator.airflow.bash import BashOperator
from orchestrator.airflow.decorators import setup, task, teardown
from orchestrator.airflow.exceptions import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
)
from orchestrator.airflow.hooks import BaseHook, Connection, Variable
from orchestrator.airflow.operators import (
    BaseOperator,
    BranchPythonOperator,
    EmptyOperator,
    LatestOnlyOperator,
    PythonOperator,
    ShortCircuitOperator,
)
from orchestrator.airflow.remote import HttpOperator, TriggerDagRunOperator
from orchestrator.airflow.sdk import (
    DAG,
    Asset,
    Label,
    TaskGroup,
    TriggerRule,
    chain,
    cross_downstream,
    dag,
    get_current_context,
    task_group,
)
from orchestrator.airflow.sensors import (
    BaseSensorOperator,
    DateTimeSensor,
    ExternalTaskSensor,
    FileSensor,
    HttpSensor,
    PythonSensor,
    TimeDeltaSensor,
    TimeSensor,
)
from orchestrator.airflow.virtualenv import ExternalPythonOperator, PythonVirtualenvOperator
from orchestrator.authoring.params import Param
from orchestrator.authoring.sensor import PokeReturnValue
from orchestrator.authoring.triggers import BaseTrigger, TaskDeferred, TriggerEvent

__all__ = [
    # airflow.sdk
    "DAG",
    "Asset",
    "BaseHook",
    "Connection",
    "Label",
    "Param",
    "PokeReturnValue",
    "TaskGroup",
    "TriggerRule",
    "Variable",
    "chain",
    "cross_downstream",
    "dag",
    "get_current_context",
    "setup",
    "task",
    "task_group",
    "teardown",
    # airflow.exceptions
    "AirflowException",
    "AirflowFailException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "TaskDeferred",
    # airflow.triggers.base (issue 30: deferrable operators)
    "BaseTrigger",
    "TriggerEvent",
    # operators
    "BaseOperator",
    "BashOperator",
    "BranchPythonOperator",
    "EmptyOperator",
    "ExternalPythonOperator",
    "HttpOperator",
    "LatestOnlyOperator",
    "PythonOperator",
    "PythonVirtualenvOperator",
    "ShortCircuitOperator",
    "TriggerDagRunOperator",
    # sensors
    "BaseSensorOperator",
    "DateTimeSensor",
    "ExternalTaskSensor",
    "FileSensor",
    "HttpSensor",
    "PythonSensor",
    "TimeDeltaSensor",
    "TimeSensor",
]
