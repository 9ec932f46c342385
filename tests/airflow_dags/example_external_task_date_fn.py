"""An ExternalTaskSensor with ``execution_date_fn``, as Airflow's docs write it: the
hourly report waits for the ingest run of the hour before (and for two earlier ones
in a second sensor). The imports are Airflow's."""

import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.sensors.external_task import ExternalTaskSensor
from airflow.sdk import DAG

start_date = datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc)  # noqa: UP017


def hour_before(logical_date, **kwargs):
    return logical_date - datetime.timedelta(hours=1)


def two_hours_before(logical_date):
    return [logical_date - datetime.timedelta(hours=h) for h in (1, 2)]


with DAG(dag_id="hourly_ingest", start_date=start_date, schedule=None) as ingest:
    EmptyOperator(task_id="load")

with DAG(dag_id="hourly_report", start_date=start_date, schedule=None) as report:
    ExternalTaskSensor(
        task_id="wait_for_ingest",
        external_dag_id="hourly_ingest",
        external_task_id="load",
        execution_date_fn=hour_before,
        allowed_states=["success"],
        failed_states=["failed"],
        mode="reschedule",
        poke_interval=1,
        timeout=600,
    )
    ExternalTaskSensor(
        task_id="wait_for_two",
        external_dag_id="hourly_ingest",
        execution_date_fn=two_hours_before,
        mode="reschedule",
        poke_interval=1,
        timeout=600,
    )
