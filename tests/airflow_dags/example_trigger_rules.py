"""Trigger rules as Airflow's docs ("DAGs: Trigger Rules") describe them, one task per
rule downstream of a task that succeeds, one that fails and one that skips itself, with
Airflow's own imports (``airflow.sdk``, ``airflow.providers.standard``,
``airflow.utils.trigger_rule``, ``airflow.exceptions``)."""

from __future__ import annotations

from datetime import datetime

from airflow.exceptions import AirflowSkipException
from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, task
from airflow.utils.trigger_rule import TriggerRule

with DAG(
    dag_id="example_trigger_rules",
    schedule=None,
    start_date=datetime(2021, 1, 1),
    catchup=False,
    tags=["example"],
) as dag:

    @task
    def succeeds():
        return "ok"

    @task(retries=0)
    def fails():
        raise ValueError("this task fails")

    @task
    def skips():
        raise AirflowSkipException("nothing to do today")

    ok, failed, skipped = succeeds(), fails(), skips()

    # the default, all_success: a failed upstream makes it upstream_failed
    [ok, failed] >> EmptyOperator(task_id="all_success")
    # ... and a skipped upstream skips it
    skipped >> EmptyOperator(task_id="after_skip")
    [ok, failed, skipped] >> BashOperator(
        task_id="cleanup", bash_command="echo cleaned up", trigger_rule=TriggerRule.ALL_DONE
    )
    [ok, failed] >> EmptyOperator(task_id="alert_on_failure", trigger_rule=TriggerRule.ONE_FAILED)
    ok >> EmptyOperator(task_id="no_failure_no_alert", trigger_rule=TriggerRule.ONE_FAILED)
    [failed, ok] >> EmptyOperator(task_id="one_success", trigger_rule=TriggerRule.ONE_SUCCESS)
    failed >> EmptyOperator(task_id="all_failed", trigger_rule=TriggerRule.ALL_FAILED)
    [ok, failed] >> EmptyOperator(task_id="not_all_failed", trigger_rule=TriggerRule.ALL_FAILED)
    [ok, skipped] >> EmptyOperator(task_id="none_failed", trigger_rule=TriggerRule.NONE_FAILED)
    [ok, failed] >> EmptyOperator(task_id="some_failed", trigger_rule=TriggerRule.NONE_FAILED)
    [ok, skipped] >> EmptyOperator(task_id="none_skipped", trigger_rule=TriggerRule.NONE_SKIPPED)
    [ok, failed] >> EmptyOperator(task_id="none_skipped_2", trigger_rule="none_skipped")
    skipped >> EmptyOperator(
        task_id="none_failed_min_one_success",
        trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS,
    )
    skipped >> EmptyOperator(task_id="all_skipped", trigger_rule=TriggerRule.ALL_SKIPPED)
    failed >> EmptyOperator(task_id="always", trigger_rule=TriggerRule.ALWAYS)
    failed >> EmptyOperator(task_id="one_done", trigger_rule=TriggerRule.ONE_DONE)
