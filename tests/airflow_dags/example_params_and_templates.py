"""Params with a schema, ``catchup=True`` over a daily schedule, and Variables,
connections and macros in templates and code, as Airflow's docs (params, templates
reference, example_passing_params_via_test_command) write them; the imports are Airflow's
(``from airflow.sdk import DAG, Param, task``, ``airflow.providers.standard``)."""

from __future__ import annotations

import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Param, task

with DAG(
    "example_params_and_templates",
    schedule="@daily",
    start_date=datetime.datetime(2025, 12, 29, tzinfo=datetime.timezone.utc),  # noqa: UP017
    catchup=True,
    max_active_runs=1,
    params={
        "x": Param(5, type="integer", minimum=3),
        "my_int_param": 6,
        "table": Param("orders", type="string", enum=["orders", "customers"]),
    },
    dagrun_timeout=datetime.timedelta(minutes=4),
) as dag:

    @task(task_id="run_this")
    def my_py_command(params, test_mode=None, task=None):
        """
        Print out the "foo" param passed in via
        `airflow tasks test example_passing_params_via_test_command run_this <date>
        -t '{"foo":"bar"}'`
        """
        return {"x": params["x"], "task": task.task_id, "tomorrow": None}

    also_run_this = BashOperator(
        task_id="also_run_this",
        bash_command='echo "{{ params.table }} {{ macros.ds_add(ds, 1) }} {{ var.value.region }} '
        '{{ conn.warehouse.host }}"',
    )
    env_var_test_task = BashOperator(
        task_id="env_var_test_task",
        bash_command='echo "x is $X"',
        env={"X": "{{ params.x * 2 }}"},
    )
    my_py_command() >> also_run_this >> env_var_test_task
