"""Callbacks as Airflow's docs ("Callbacks") write them, with Airflow 2's import paths
(``airflow.models.dag``, ``airflow.operators.*``); each
callback appends what its context says to ``callbacks.jsonl`` beside this file."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

from airflow.models.dag import DAG
from airflow.operators.empty import EmptyOperator
from airflow.operators.python import PythonOperator

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callbacks.jsonl")


def _write(kind, context):
    with open(LOG, "a") as f:
        f.write(json.dumps({"kind": kind, "run_id": context["run_id"],
                            "task": context["ti"].task_id}) + "\n")  # fmt: skip


def task_failure_alert(context):
    _write("task_failure", context)


def dag_failure_alert(context):
    _write("dag_failure", context)


def dag_success_alert(context):
    _write("task_success", context)


def also_on_success(context):
    _write("task_success_2", context)


def fail():
    raise ValueError("this task fails")


with DAG(
    dag_id="example_callback",
    schedule=None,
    start_date=datetime(2021, 1, 1),
    dagrun_timeout=timedelta(minutes=60),
    catchup=False,
    on_success_callback=None,
    on_failure_callback=dag_failure_alert,
    tags=["example"],
):
    task1 = EmptyOperator(task_id="task1")
    task2 = EmptyOperator(task_id="task2")
    task3 = EmptyOperator(task_id="task3", on_success_callback=[dag_success_alert, also_on_success])
    task4 = PythonOperator(
        task_id="task4", python_callable=fail, on_failure_callback=task_failure_alert
    )
    task1 >> task2 >> task3 >> task4
