"""Airflow 3 ``airflow.sdk`` helpers in one DAG, as Airflow's docs write them:
``with DAG``, ``default_args``, ``@task.branch``, ``@task.short_circuit``,
``@task.bash``, ``Label``, ``chain``, ``cross_downstream``, ``get_current_context``, ``TriggerRule``,
``@task_group``, ``@setup`` / ``@teardown``, ``Param``, ``Variable``,
``BaseHook.get_connection`` and the task exceptions. The imports are Airflow's
(``from airflow.sdk import ...``, ``from airflow.exceptions import ...``)."""

from datetime import datetime, timedelta

from airflow.exceptions import AirflowFailException, AirflowSkipException
from airflow.sdk import (
    DAG,
    BaseHook,
    Label,
    Param,
    Variable,
    chain,
    cross_downstream,
    get_current_context,
    setup,
    task,
    task_group,
    teardown,
)
from airflow.utils.trigger_rule import TriggerRule

default_args = {
    "owner": "data",
    "retries": 1,
    "retry_delay": timedelta(seconds=1),
    "retry_exponential_backoff": False,
}

with DAG(
    "sdk_helpers",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args=default_args,
    params={"mode": Param("full", type="string", enum=["full", "delta"])},
    tags=["example"],
) as dag:

    @setup
    def create_workdir():
        return "/tmp/work"

    @task
    def which_day():
        context = get_current_context()
        return {"ds": context["ds"], "run_id": context["run_id"]}

    @task.branch
    def pick(params=None):
        return "full_load" if params["mode"] == "full" else "delta_load"

    @task
    def full_load():
        return "full"

    @task
    def delta_load():
        return "delta"

    @task(trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    def join():
        return "joined"

    @task.short_circuit
    def has_rows():
        return False

    @task
    def never_runs():
        return "should be skipped"

    @task
    def skip_me():
        raise AirflowSkipException("nothing to do today")

    @task(retries=3)
    def fail_fast():
        raise AirflowFailException("bad input: no retry")

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def credentials():
        region = Variable.get("region", default="eu-west-1")
        limits = Variable.get("limits", deserialize_json=True)
        warehouse = BaseHook.get_connection("warehouse")
        return {"region": region, "max": limits["max"], "host": warehouse.host}

    @task_group
    def report_group():
        @task
        def a():
            return 1

        @task
        def b():
            return 2

        @task
        def c():
            return 3

        @task
        def d():
            return 4

        cross_downstream([a(), b()], [c(), d()])

    @task.bash(env={"WHO": "bash"}, append_env=True)
    def greet_in_bash(params=None):
        return 'echo "$WHO says {{ params.mode }} on {{ ds }}" && exit 0'

    @teardown
    def remove_workdir():
        return "removed"

    work = create_workdir()
    branch = pick()
    day = which_day()
    work >> day >> branch
    branch >> Label("full") >> full_load() >> join()
    branch >> Label("delta") >> delta_load() >> join
    chain(join, has_rows(), never_runs())
    chain(day, [skip_me(), fail_fast()], credentials())
    credentials >> report_group() >> remove_workdir()
    work >> remove_workdir
    day >> greet_in_bash()
