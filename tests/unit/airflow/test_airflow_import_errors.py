"""An Airflow argument or name we do not support is an import error naming the DAG
file's line, the name and what to write instead (issue 26), never silently ignored."""

from __future__ import annotations

import textwrap

import pytest

from orchestrator.authoring.loader import DagImportError, load_file

HEAD = """\
from datetime import datetime, timedelta
from orchestrator.airflow import *
from orchestrator.airflow import Variable, task

"""

CASES = [
    (
        'with DAG("d"):\n    BashOperator(task_id="t", bash_command="true", sla=timedelta(1))',
        6,
        ["BashOperator 't'", "sla= is not supported", "deadline="],
    ),
    (
        'with DAG("d"):\n    EmptyOperator(task_id="t", retires=2)',
        6,
        ["EmptyOperator 't'", "unknown argument retires=", "retries"],
    ),
    (
        'with DAG("d", schedule_interval="@daily"):\n    pass',
        5,
        ["DAG 'd'", "schedule_interval=", "write schedule="],
    ),
    (
        'with DAG("d"):\n    @task.docker(image="x")\n    def f():\n        pass',
        6,
        ["@task.docker is not supported", "BashOperator"],
    ),
    (
        'REGION = Variable.get("region")',
        5,
        ["Variable.get('region')", "outside a task", "{{ var.value.name }}"],
    ),
    (
        'with DAG("d"):\n    ExternalTaskSensor(task_id="s", external_dag_id="up",\n'
        '                       execution_date_fn="not a function")',
        6,
        ["ExternalTaskSensor 's'", "execution_date_fn= must be a function"],
    ),
    (
        'with DAG("d"):\n    with TaskGroup("g", prefix_group_id=False):\n        pass',
        6,
        ["task group 'g'", "prefix_group_id=", "'group.task'"],
    ),
    (
        'EmptyOperator(task_id="lonely")',
        5,
        ["EmptyOperator 'lonely' is created outside a DAG", "pass dag="],
    ),
    (
        'with DAG("d"):\n    FileSensor(task_id="f", filepath="x", fs_conn_id="nfs")',
        6,
        ["FileSensor 'f'", "fs_conn_id='nfs'", "filepath="],
    ),
    (
        'with DAG("d"):\n    TriggerDagRunOperator(task_id="k", trigger_dag_id="b",\n'
        '                          trigger_run_id="x")',
        6,
        ["TriggerDagRunOperator 'k'", "trigger_run_id=", "exactly once"],
    ),
    (
        'with DAG("d"):\n    BashOperator(task_id="b", bash_command="x", skip_on_exit_code=[1, 2])',
        6,
        ["BashOperator 'b'", "skip_on_exit_code=[1, 2]", "one exit status"],
    ),
    (
        'with DAG("d"):\n    @task_group\n    def g(x):\n        pass\n    g.expand(x=[1])',
        9,
        ["mapped task group 'g'", "creates no task"],
    ),
    (
        'with DAG("d"):\n    BashOperator(task_id="t", bash_command="true", task_group=None)',
        6,
        ["task_group= is not supported", "'with TaskGroup(...):'"],
    ),
    (
        'a = Asset("orders", extra={"owner": "x"})',
        5,
        ["Asset 'orders'", "extra= is not supported", "outlet_events"],
    ),
    (
        'with DAG("d"):\n    @task(sla=timedelta(hours=1))\n    def f():\n        pass',
        6,
        ["@task 'f'", "sla= is not supported", "deadline="],
    ),
    (
        'with DAG("d"):\n    @task.sensor(poke_interval=5, silent_fail=True)\n    def f():\n'
        "        return True",
        6,
        ["@task.sensor 'f'", "unknown argument silent_fail="],
    ),
    (
        'with DAG("d"):\n    BashOperator(task_id="t", bash_command="x", output_processor=len)',
        6,
        ["BashOperator 't'", "output_processor=", "downstream"],
    ),
    (
        'with DAG("d"):\n    PythonVirtualenvOperator(task_id="v", python_callable=len,\n'
        "                             use_dill=True)",
        6,
        ["PythonVirtualenvOperator 'v'", "use_dill=", "JSON"],
    ),
    (
        'with DAG("d"):\n    PythonSensor(task_id="p", python_callable=bool, never_fail=True)',
        6,
        ["PythonSensor 'p'", "never_fail=", "soft_fail=True"],
    ),
]


@pytest.mark.parametrize(("body", "line", "words"), CASES)
def test_an_unsupported_argument_or_name_names_the_line_and_the_alternative(
    tmp_path, body, line, words
):
    path = tmp_path / "ported.py"
    path.write_text(HEAD + textwrap.dedent(body) + "\n")
    with pytest.raises(DagImportError) as info:
        load_file(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: ") or f"ported.py:{line}: " in message, message
    for word in words:
        assert word in message, message
