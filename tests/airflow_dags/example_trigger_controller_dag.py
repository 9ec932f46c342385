"""Airflow's example_trigger_controller_dag, with its Airflow imports
(``airflow.providers.standard.operators.trigger_dagrun``, ``airflow.sdk``); it waits
for the triggered run (``wait_for_completion``) instead of running on ``@once``."""

from datetime import datetime

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG

with DAG(
    dag_id="example_trigger_controller_dag",
    start_date=datetime(2021, 1, 1),
    catchup=False,
    schedule=None,
    tags=["example"],
) as dag:
    trigger = TriggerDagRunOperator(
        task_id="test_trigger_dagrun",
        trigger_dag_id="example_trigger_target_dag",  # Ensure this equals the dag_id of the DAG to trigger
        conf={"message": "Hello World"},
        wait_for_completion=True,
        poke_interval=1,
    )
