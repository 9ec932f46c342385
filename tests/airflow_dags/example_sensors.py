"""Airflow's example_sensors, with Airflow 2's import paths
(``airflow.models.dag``, ``airflow.sensors.*``, ``airflow.operators.bash``). BashSensor and
DayOfWeekSensor are left out (not supported here); the file the FileSensor waits for
is relative (read from the DAG file's folder, where the BashOperator runs), and the
TimeSensors' targets are fixed times of the run's day instead of ``now()``."""

import datetime

from airflow.models.dag import DAG
from airflow.operators.bash import BashOperator
from airflow.sensors.date_time import DateTimeSensor
from airflow.sensors.filesystem import FileSensor
from airflow.sensors.python import PythonSensor
from airflow.sensors.time_delta import TimeDeltaSensor
from airflow.sensors.time_sensor import TimeSensor
from airflow.utils.trigger_rule import TriggerRule


def success_callable():
    return True


def failure_callable():
    return False


with DAG(
    dag_id="example_sensors",
    schedule=None,
    start_date=datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc),  # noqa: UP017
    catchup=False,
    tags=["example"],
) as dag:
    t0 = TimeDeltaSensor(task_id="wait_some_seconds", delta=datetime.timedelta(seconds=2))
    t0a = TimeDeltaSensor(
        task_id="wait_some_seconds_async", delta=datetime.timedelta(seconds=2), deferrable=True
    )
    t1 = TimeSensor(task_id="fire_immediately", target_time=datetime.time(0, 0))
    t2 = TimeSensor(
        task_id="timeout_after_second_date_in_the_future",
        timeout=1,
        soft_fail=True,
        target_time=datetime.time(23, 0),
    )
    t3 = DateTimeSensor(task_id="wait_for_data_interval_end", target_time="{{ data_interval_end }}")
    t7 = FileSensor(task_id="wait_for_file", filepath="temporary_file_for_testing")
    t8 = BashOperator(
        task_id="create_file_after_3_seconds",
        bash_command="sleep 0; touch temporary_file_for_testing",
    )
    t9 = PythonSensor(task_id="success_sensor_python", python_callable=success_callable)
    t10 = PythonSensor(
        task_id="failure_timeout_sensor_python",
        timeout=3,
        soft_fail=True,
        python_callable=failure_callable,
        mode="reschedule",
    )
    tx = BashOperator(task_id="print_date_in_bash", bash_command="date")
    tx.trigger_rule = TriggerRule.NONE_FAILED

    [t0, t0a, t1, t2, t3] >> tx
    t8 >> t7 >> tx
    [t9, t10] >> tx
