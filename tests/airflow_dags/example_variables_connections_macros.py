"""Variables, Connections and macros as Airflow's docs ("Variables", "Managing
Connections", "Templates reference") use them, in templates (``{{ var.value.x }}``,
``{{ var.json.x.y }}``, ``{{ conn.x.host }}``, ``{{ macros.ds_add(ds, 1) }}``) and in code
(``Variable.get``, ``BaseHook.get_connection``, a TaskFlow task's ``macros``, a
PythonOperator's ``templates_dict``), with Airflow's own imports."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, BaseHook, Variable, task


def print_templates(templates_dict=None, **context):
    return {"environment": templates_dict["environment"], "week": templates_dict["week"]}


with DAG(
    dag_id="example_variables_connections_macros",
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    tags=["example"],
) as dag:
    in_templates = BashOperator(
        task_id="in_templates",
        bash_command=(
            "echo {{ ds }} {{ macros.ds_add(ds, 1) }} "
            "{{ macros.ds_format(ds, '%Y-%m-%d', '%d/%m/%Y') }} "
            "{{ var.value.environment }} {{ var.json.settings.retries }} "
            "{{ conn.warehouse.host }}:{{ conn.warehouse.port }}/{{ conn.warehouse.schema }}"
        ),
    )

    @task
    def in_code():
        environment = Variable.get("environment")
        settings = Variable.get("settings", deserialize_json=True)
        missing = Variable.get("not_set_anywhere", default="fallback")
        conn = BaseHook.get_connection("warehouse")
        return {
            "environment": environment,
            "retries": settings["retries"],
            "missing": missing,
            "conn": [conn.conn_type, conn.host, conn.port, conn.login, conn.schema],
        }

    @task
    def with_macros(ds=None, ds_nodash=None, macros=None):
        return {"yesterday": macros.ds_add(ds, -1), "ds_nodash": ds_nodash}

    templates_dict = PythonOperator(
        task_id="templates_dict",
        python_callable=print_templates,
        templates_dict={
            "environment": "{{ var.value.environment }}",
            "week": "{{ macros.ds_format(ds, '%Y-%m-%d', '%G-W%V') }}",
        },
    )

    in_templates >> in_code() >> with_macros() >> templates_dict
