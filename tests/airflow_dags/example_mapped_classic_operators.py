"""Mapped classic operators as Airflow's "Dynamic Task Mapping" docs write them:
``BashOperator.partial(...).expand(bash_command=...)`` over literals, over a TaskFlow
task's result and with a templated ``env`` fixed by ``partial``;
``PythonOperator.partial(...).expand(...)`` over one argument and over two (their cross
product); the mapped instances' output reduced downstream. Airflow's own imports.
(``expand(env=...)`` and ``expand_kwargs`` on a classic operator are not supported
here: docs/porting.md.)"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, task


def add(x: int, y: int):
    return x + y


def join(word, sep=" "):
    return sep.join([word, word])


with DAG(
    dag_id="example_mapped_classic_operators",
    start_date=datetime(2022, 3, 4),
    schedule=None,
    catchup=False,
) as dag:
    counts = BashOperator.partial(task_id="count", do_xcom_push=True).expand(
        bash_command=["echo 1", "echo 2", "echo 3"]
    )

    @task
    def make_commands():
        return ['echo "hello alpha"', 'echo "hello beta"']

    greet = BashOperator.partial(task_id="greet").expand(bash_command=make_commands())

    dated = BashOperator.partial(task_id="dated", env={"DAY": "{{ ds }}"}).expand(
        bash_command=['echo "$DAY a"', 'echo "$DAY b"']
    )

    added = PythonOperator.partial(task_id="add", python_callable=add, op_kwargs={"y": 10}).expand(
        op_args=[[1], [2]]
    )

    joined = PythonOperator.partial(task_id="join", python_callable=join).expand(
        op_args=[["a"], ["b"]], op_kwargs=[{"sep": "-"}, {"sep": "+"}]
    )

    @task
    def collect(counted, greetings):
        return {"sum": sum(int(c) for c in counted), "greetings": list(greetings)}

    collect(counts.output, greet.output)
