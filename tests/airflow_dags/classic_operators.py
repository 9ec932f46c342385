"""Airflow's classic operators, as its example DAGs write them
(example_python_operator, example_branch_operator, example_short_circuit_operator,
example_bash_operator, example_dynamic_task_mapping, a custom operator), with
their Airflow imports (``airflow.providers.standard.operators.*``, ``airflow.sdk``)."""

from datetime import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import (
    BranchPythonOperator,
    PythonOperator,
    ShortCircuitOperator,
)
from airflow.sdk import DAG, BaseOperator, chain
from airflow.utils.trigger_rule import TriggerRule


class HelloOperator(BaseOperator):
    template_fields = ("name",)

    def __init__(self, name: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.name = name

    def execute(self, context):
        message = f"Hello {self.name} on {context['ds']}"
        print(message)
        return message


def print_context(ds=None, **kwargs):
    """Print the Airflow context and ds variable from the context."""
    print(kwargs)
    print(ds)
    return "Whatever you return gets printed in the logs"


def my_sleeping_function(random_base):
    return random_base * 2


def show_templates(templates_dict=None, **kwargs):
    return templates_dict["day"]


def add_one(x):
    return x + 1


with DAG(
    dag_id="classic_operators",
    schedule=None,
    start_date=datetime(2021, 1, 1),
    catchup=False,
    params={"who": "world"},
    tags=["example"],
) as dag:
    run_this = PythonOperator(task_id="print_the_context", python_callable=print_context)

    for i in range(3):
        task = PythonOperator(
            task_id=f"sleep_for_{i}",
            python_callable=my_sleeping_function,
            op_kwargs={"random_base": i / 10},
        )
        run_this >> task

    templates = PythonOperator(
        task_id="templates",
        python_callable=show_templates,
        templates_dict={"day": "{{ ds_nodash }}"},
    )

    branching = BranchPythonOperator(
        task_id="branching",
        python_callable=lambda: "branch_b",
    )
    join = EmptyOperator(task_id="join", trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    for option in ("branch_a", "branch_b"):
        t = EmptyOperator(task_id=option)
        branching >> t >> join

    cond_true = ShortCircuitOperator(task_id="condition_is_true", python_callable=lambda: True)
    cond_false = ShortCircuitOperator(task_id="condition_is_false", python_callable=lambda: False)
    ds_true = [EmptyOperator(task_id=f"true_{i}") for i in [1, 2]]
    ds_false = [EmptyOperator(task_id=f"false_{i}") for i in [1, 2]]
    chain(cond_true, *ds_true)
    chain(cond_false, *ds_false)

    bash_env = BashOperator(
        task_id="bash_env",
        bash_command='echo "day=$DAY in $(pwd)"',
        env={"DAY": "{{ ds }}"},
        append_env=True,
        cwd="/tmp",
    )
    skipped_by_exit = BashOperator(task_id="skipped_by_exit", bash_command="exit 99")
    bashism = BashOperator(
        task_id="bashism",
        bash_command='days=({{ ds }} next); [[ -n "$BASH" ]] && echo "${days[1]} ${days[0]}"',
    )
    uses_output = PythonOperator(
        task_id="uses_output",
        python_callable=lambda line: line.upper(),
        op_args=[bash_env.output],
    )

    added = PythonOperator.partial(task_id="add_one", python_callable=add_one).expand(
        op_args=[[1], [2], [3]]
    )
    echoes = BashOperator.partial(task_id="echoes").expand(bash_command=["echo one", "echo two"])
    hello = HelloOperator(task_id="hello", name="{{ params.who }}")

    run_this >> templates >> branching
    hello >> added
