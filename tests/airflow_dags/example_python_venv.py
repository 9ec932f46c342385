"""Airflow's example_python_operator, its virtualenv and external-Python parts, with
their Airflow imports (``airflow.providers.standard.operators.python``,
``airflow.sdk``)."""

from __future__ import annotations

import sys
from datetime import datetime

from airflow.providers.standard.operators.python import (
    ExternalPythonOperator,
    PythonOperator,
    PythonVirtualenvOperator,
)
from airflow.sdk import DAG

PATH_TO_PYTHON_BINARY = sys.executable


def callable_virtualenv():
    """
    Example function that will be performed in a virtual environment.

    Importing at the module level ensures that it will not attempt to import the
    library before it is installed.
    """
    import json

    return json.loads('{"in": "a virtualenv"}')


def callable_external_python(a, b=0):
    """
    Example function that will be performed in a virtual environment.
    """
    import sys as _sys

    return {"sum": a + b, "version": list(_sys.version_info[:2])}


def double(x):
    return x * 2


with DAG(
    dag_id="example_python_operator",
    schedule=None,
    start_date=datetime(2021, 1, 1),
    catchup=False,
    tags=["example"],
):
    numbers = PythonOperator(task_id="numbers", python_callable=lambda: 20)
    virtualenv_task = PythonVirtualenvOperator(
        task_id="virtualenv_python",
        python_callable=callable_virtualenv,
        requirements=[],
        system_site_packages=False,
    )
    external_python_task = ExternalPythonOperator(
        task_id="external_python",
        python_callable=callable_external_python,
        python=PATH_TO_PYTHON_BINARY,
        op_args=[numbers.output],
        op_kwargs={"b": 1},
    )
    doubled = ExternalPythonOperator(
        task_id="doubled", python=PATH_TO_PYTHON_BINARY, python_callable=double, op_args=[21]
    )
    numbers >> virtualenv_task
