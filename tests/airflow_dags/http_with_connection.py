"""HttpOperator and HttpSensor with an HTTP connection, as the HTTP provider's example
DAG (example_http.py) writes them, with their Airflow imports
(``airflow.providers.http.operators.http``, ``airflow.providers.http.sensors.http``)."""

import json
from datetime import datetime

from airflow.providers.http.operators.http import HttpOperator
from airflow.providers.http.sensors.http import HttpSensor
from airflow.sdk import DAG

with DAG(
    "example_http_operator",
    default_args={"retries": 0},
    tags=["example"],
    start_date=datetime(2021, 1, 1),
    catchup=False,
) as dag:
    dag.doc_md = __doc__
    task_post_op = HttpOperator(
        task_id="post_op",
        http_conn_id="api",
        endpoint="post",
        data=json.dumps({"priority": 5}),
        headers={"Content-Type": "application/json"},
        response_check=lambda response: response.json()["path"] == "/post",
    )
    task_get_op = HttpOperator(
        task_id="get_op",
        http_conn_id="api",
        method="GET",
        endpoint="get/{{ ds }}",
        data={"param1": "value1", "param2": "value2"},
        headers={},
        response_filter=lambda response: response.json()["path"],
    )
    task_http_sensor_check = HttpSensor(
        task_id="http_sensor_check",
        http_conn_id="api",
        endpoint="",
        request_params={},
        response_check=lambda response: "echo" in response.text,
        poke_interval=5,
    )
    task_bad_status = HttpOperator(
        task_id="bad_status",
        http_conn_id="api",
        method="GET",
        endpoint="status/500",
    )
    task_http_sensor_check >> task_post_op >> task_get_op >> task_bad_status
