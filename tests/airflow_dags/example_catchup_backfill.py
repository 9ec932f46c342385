"""Catchup and backfill as Airflow's docs ("DAG Runs: Catchup", "Backfill") write them:
a daily DAG with ``catchup=True``, paused when it first appears
(``is_paused_upon_creation``), backfilled with ``airflow backfill create --dag-id ...
--from-date ... --to-date ...``, then unpaused to catch up the days left; each run's
``ds`` and ``depends_on_past`` as Airflow gives them. Airflow's own imports (Airflow 2
paths: ``airflow.models.dag``, ``airflow.operators.bash``)."""

import datetime

from airflow.models.dag import DAG
from airflow.operators.bash import BashOperator

dag = DAG(
    "example_catchup_backfill",
    default_args={
        "depends_on_past": True,
        "retries": 1,
        "retry_delay": datetime.timedelta(minutes=3),
    },
    start_date=datetime.datetime(2025, 12, 26, tzinfo=datetime.timezone.utc),  # noqa: UP017
    description="A simple tutorial DAG",
    schedule="@daily",
    catchup=True,
    is_paused_upon_creation=True,
)

print_date = BashOperator(
    task_id="print_date",
    bash_command="echo {{ ds }}",
    dag=dag,
)

report = BashOperator(
    task_id="report",
    bash_command="echo {{ run_id }} {{ dag_run.logical_date | ds }} {{ data_interval_end | ds }}",
    dag=dag,
)

print_date >> report
