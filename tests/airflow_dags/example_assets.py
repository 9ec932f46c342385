"""Airflow's asset scheduling (example_assets / example_asset_alias docs), with their
Airflow imports (``from airflow.sdk import DAG, Asset``, ``from
airflow.providers.standard.operators.bash import BashOperator``); Airflow's example
gives ``dag1_asset`` an ``extra`` dict, which assets here do not carry."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Asset

# [START asset_def]
dag1_asset = Asset("s3://dag1/output_1.txt")
# [END asset_def]
dag2_asset = Asset("s3://dag2/output_1.txt")
dag3_asset = Asset("s3://dag3/output_3.txt")

with DAG(
    dag_id="asset_produces_1",
    catchup=False,
    start_date=datetime(2021, 1, 1),
    schedule="@daily",
    tags=["produces", "asset-scheduled"],
) as dag1:
    # [START task_outlet]
    BashOperator(outlets=[dag1_asset], task_id="producing_task_1", bash_command="sleep 0")
    # [END task_outlet]

with DAG(
    dag_id="asset_produces_2",
    start_date=datetime(2021, 1, 1),
    schedule=None,
    tags=["produces", "asset-scheduled"],
) as dag2:
    BashOperator(outlets=[dag2_asset], task_id="producing_task_2", bash_command="sleep 0")

# [START dag_dep]
with DAG(
    dag_id="asset_consumes_1",
    catchup=False,
    start_date=datetime(2021, 1, 1),
    schedule=[dag1_asset],
    tags=["consumes", "asset-scheduled"],
) as dag3:
    # [END dag_dep]
    BashOperator(
        outlets=[Asset("s3://consuming_1_task/asset_other.txt")],
        task_id="consuming_1",
        bash_command="sleep 0",
    )

with DAG(
    dag_id="consume_1_and_2_with_asset_expressions",
    start_date=datetime(2021, 1, 1),
    schedule=(dag1_asset & dag2_asset),
) as dag5:
    BashOperator(
        outlets=[Asset("s3://consuming_2_task/asset_other_unknown.txt")],
        task_id="consume_1_and_2_with_asset_expressions",
        bash_command="sleep 0",
    )

with DAG(
    dag_id="consume_1_or_2_with_asset_expressions",
    start_date=datetime(2021, 1, 1),
    schedule=(dag1_asset | dag2_asset),
) as dag6:
    BashOperator(
        outlets=[Asset("s3://consuming_2_task/asset_other_unknown.txt")],
        task_id="consume_1_or_2_with_asset_expressions",
        bash_command="sleep 0",
    )

with DAG(
    dag_id="consume_1_or_both_2_and_3_with_asset_expressions",
    start_date=datetime(2021, 1, 1),
    schedule=(dag1_asset | (dag2_asset & dag3_asset)),
) as dag7:
    BashOperator(
        outlets=[Asset("s3://consuming_2_task/asset_other_unknown.txt")],
        task_id="consume_1_or_both_2_and_3_with_asset_expressions",
        bash_command="sleep 0",
    )
