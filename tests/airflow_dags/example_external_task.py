"""Airflow's example_external_task_marker_dag (parent and child), the child waiting
with an ExternalTaskSensor, and a ``@task.sensor`` returning ``PokeReturnValue`` as
Airflow's docs write it; the imports are Airflow's."""

import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.sensors.external_task import ExternalTaskSensor
from airflow.sdk import DAG, BaseSensorOperator, PokeReturnValue, task

start_date = datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc)  # noqa: UP017

with DAG(
    dag_id="example_external_task_marker_parent",
    start_date=start_date,
    catchup=False,
    schedule=None,
    tags=["example2"],
) as parent_dag:
    parent_task = EmptyOperator(task_id="parent_task")


class UpstreamValueSensor(BaseSensorOperator):
    """A custom sensor: met once the upstream sensor's value is there."""

    def poke(self, context):
        return context["ti"].xcom_pull(task_ids="wait_for_upstream") == "xcom_value"


with DAG(
    dag_id="example_external_task_marker_child",
    start_date=start_date,
    schedule=None,
    catchup=False,
    tags=["example2"],
) as child_dag:
    child_task1 = ExternalTaskSensor(
        task_id="child_task1",
        external_dag_id=parent_dag.dag_id,
        external_task_id=parent_task.task_id,
        timeout=600,
        allowed_states=["success"],
        failed_states=["failed", "skipped"],
        mode="reschedule",
        poke_interval=1,
    )

    @task.sensor(poke_interval=1, timeout=3600, mode="reschedule")
    def wait_for_upstream() -> PokeReturnValue:
        return PokeReturnValue(is_done=True, xcom_value="xcom_value")

    custom = UpstreamValueSensor(task_id="custom", poke_interval=1, mode="reschedule")
    child_task2 = EmptyOperator(task_id="child_task2")
    child_task1 >> wait_for_upstream() >> custom >> child_task2
