"""Airflow's sensors in ``mode="reschedule"`` (a poke per ``poke_interval``, no worker
slot held in between), as its sensor docs write them: FileSensor, TimeDeltaSensor,
TimeSensor, DateTimeSensor (one met, one that times out softly), PythonSensor, HttpSensor against a
connection (one met, one answered 404 until its timeout) and ExternalTaskSensor (in
poke mode) waiting for another DAG's task; Airflow's own imports."""

from __future__ import annotations

import datetime
import os

from airflow.providers.http.sensors.http import HttpSensor
from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.sensors.date_time import DateTimeSensor
from airflow.providers.standard.sensors.external_task import ExternalTaskSensor
from airflow.providers.standard.sensors.filesystem import FileSensor
from airflow.providers.standard.sensors.python import PythonSensor
from airflow.providers.standard.sensors.time import TimeSensor
from airflow.providers.standard.sensors.time_delta import TimeDeltaSensor
from airflow.sdk import DAG

FLAG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ready.flag")


def flag_is_up(path):
    return os.path.exists(path)


with DAG(
    dag_id="example_sensor_upstream",
    schedule=None,
    start_date=datetime.datetime(2021, 1, 1),
    catchup=False,
) as upstream:
    BashOperator(task_id="publish", bash_command="echo published")

with DAG(
    dag_id="example_sensors_reschedule",
    schedule=None,
    start_date=datetime.datetime(2021, 1, 1),
    catchup=False,
    tags=["example"],
) as dag:
    wait_for_file = FileSensor(
        task_id="wait_for_file",
        filepath="incoming/{{ ds }}.csv",
        poke_interval=60,
        timeout=60 * 60,
        mode="reschedule",
    )
    wait_half_an_hour = TimeDeltaSensor(
        task_id="wait_half_an_hour",
        delta=datetime.timedelta(minutes=30),
        poke_interval=5 * 60,
        mode="reschedule",
    )
    half_past_midnight = TimeSensor(
        task_id="half_past_midnight",
        target_time=datetime.time(0, 30),
        poke_interval=10 * 60,
        mode="reschedule",
    )
    past_date = DateTimeSensor(
        task_id="past_date",
        target_time="{{ data_interval_end }}",
        poke_interval=60,
        mode="reschedule",
    )
    date_far_ahead = DateTimeSensor(
        task_id="date_far_ahead",
        target_time=datetime.datetime(2199, 1, 1),
        poke_interval=10 * 60,
        timeout=60 * 60,
        soft_fail=True,
        mode="reschedule",
    )
    wait_for_flag = PythonSensor(
        task_id="wait_for_flag",
        python_callable=flag_is_up,
        op_args=[FLAG],
        poke_interval=60,
        timeout=60 * 60,
        mode="reschedule",
    )
    api_is_up = HttpSensor(
        task_id="api_is_up",
        http_conn_id="api",
        endpoint="health",
        response_check=lambda response: response.json()["path"] == "/health",
        poke_interval=60,
        mode="reschedule",
    )
    never_found = HttpSensor(
        task_id="never_found",
        http_conn_id="api",
        endpoint="status/404",
        poke_interval=5 * 60,
        timeout=30 * 60,
        soft_fail=True,
        mode="reschedule",
    )
    wait_for_upstream = ExternalTaskSensor(
        task_id="wait_for_upstream",
        external_dag_id="example_sensor_upstream",
        external_task_id="publish",
        allowed_states=["success"],
        failed_states=["failed"],
        poke_interval=60,
    )
    all_met = EmptyOperator(task_id="all_met", trigger_rule="none_failed")

    [
        wait_for_file,
        wait_half_an_hour,
        half_past_midnight,
        past_date,
        date_far_ahead,
        wait_for_flag,
        api_is_up,
        never_found,
        wait_for_upstream,
    ] >> all_met
