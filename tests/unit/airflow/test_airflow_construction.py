"""``orchestrator.airflow``'s adapters build the tasks and DAG options Airflow's
arguments mean (issue 26): common operator arguments, wiring, labels, chain,
timezones, assets, exceptions; and every exported name is listed in docs/porting.md."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import orchestrator.airflow as airflow
from orchestrator.airflow import (
    DAG,
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    Asset,
    BashOperator,
    EmptyOperator,
    FileSensor,
    Label,
    PythonOperator,
    TaskGroup,
    TriggerRule,
    chain,
    cross_downstream,
    get_current_context,
    task,
)
from orchestrator.airflow.runtime import call_with_context
from orchestrator.authoring.spec import serialize_dag
from orchestrator.errors import DagDefinitionError, Fail, Skip

ROOT = Path(__file__).resolve().parents[3]


def _one(*_args, **_kwargs):
    return None


def test_common_operator_arguments_become_the_task_options():
    with DAG("d", schedule=None, default_args={"owner": "data", "retries": 2}) as d:
        t = BashOperator(
            task_id="t",
            bash_command="echo hi",
            retries=4,
            retry_delay=timedelta(seconds=7),
            retry_exponential_backoff=False,
            max_retry_delay=timedelta(minutes=3),
            execution_timeout=timedelta(minutes=1),
            trigger_rule=TriggerRule.ALL_DONE,
            depends_on_past=True,
            pool="db",
            pool_slots=2,
            queue="heavy",
            priority_weight=9,
            email=["ops@example.com"],
            email_on_failure=True,
            on_failure_callback=[_one, _one],
            on_success_callback=_one,
            doc_md="**t**",
        )
        EmptyOperator(task_id="quiet", email="a@b.c", email_on_failure=False)
    task_ = d.tasks["t"]
    assert (task_.retries, task_.retry_delay, task_.retry_exponential) == (
        4, timedelta(seconds=7), False,
    )  # fmt: skip
    assert (task_.max_retry_delay, task_.timeout) == (timedelta(minutes=3), timedelta(minutes=1))
    assert (task_.trigger_rule, task_.depends_on_past, task_.pool, task_.pool_slots) == (
        "all_done", True, "db", 2,
    )  # fmt: skip
    assert (task_.queue, task_.priority_weight, task_.owner) == ("heavy", 9, "data")
    assert [a["target"] for a in task_.alerts] == [["ops@example.com"]]
    assert set(task_.callbacks) == {"on_failure", "on_success"}
    assert task_.doc_md == "**t**" and task_.kind == "shell"
    assert task_.output_last_line and t.task_id == "t"
    assert d.tasks["quiet"].alerts == [] and d.tasks["quiet"].retries == 2


def test_an_operator_with_dag_outside_the_with_block_and_inside_a_group():
    d = DAG("d", schedule=None)
    a = EmptyOperator(task_id="a", dag=d)
    with d, TaskGroup("g", tooltip="group"):
        b = PythonOperator(task_id="b", python_callable=_one)
    a >> b
    assert b.task_id == "g.b" and d.tasks["g.b"].upstream_ids == {"a"}


def test_wiring_lists_labels_chain_and_cross_downstream():
    with DAG("d", schedule=None) as d:
        a, b, c, e, f, g, h = (EmptyOperator(task_id=n) for n in "abcefgh")
        a >> Label("ok") >> [b, c]
        [b, c] >> Label("join") >> e
        f << Label("back") << e
        chain(f, [g, h])
        x1, x2, y1, y2 = (EmptyOperator(task_id=n) for n in ("x1", "x2", "y1", "y2"))
        cross_downstream([x1, x2], [y1, y2])
        chain([x1, x2], [y1, y2])
    ups = {t: x.upstream_ids for t, x in d.tasks.items()}
    assert ups["b"] == ups["c"] == {"a"} and ups["e"] == {"b", "c"} and ups["f"] == {"e"}
    assert ups["g"] == ups["h"] == {"f"}
    assert ups["y1"] == ups["y2"] == {"x1", "x2"}
    with (
        pytest.raises(DagDefinitionError, match="same length, got 2 and 3"),
        DAG("e", schedule=None),
    ):
        chain([EmptyOperator(task_id="p"), EmptyOperator(task_id="q")],
              [EmptyOperator(task_id=n) for n in "rst"])  # fmt: skip


def test_the_dag_timezone_is_its_aware_start_dates_and_callbacks_map():
    with DAG(
        "d",
        schedule="0 2 * * *",
        start_date=datetime(2026, 1, 1, tzinfo=ZoneInfo("Europe/Berlin")),
        on_failure_callback=_one,
        is_paused_upon_creation=True,
    ) as d:
        EmptyOperator(task_id="a")
    assert d.timezone == "Europe/Berlin" and d.paused
    assert set(d.callbacks) == {"on_failure"}
    with DAG("u", schedule=None, start_date=datetime(2026, 1, 1)) as u:
        pass
    assert u.timezone == "UTC" and u.start_date == datetime(2026, 1, 1, tzinfo=UTC)


def test_assets_take_airflow_3s_name_first_form():
    assert Asset("s3://bucket/orders").uri == "s3://bucket/orders"
    named = Asset(name="orders", uri="s3://bucket/orders")
    assert (named.uri, named.name, named.group) == ("s3://bucket/orders", "orders", None)
    assert Asset("orders").uri == "asset://orders" and Asset("orders").name == "orders"
    assert Asset("orders") == Asset("orders")  # one asset, by its URI


def test_the_exceptions_are_our_task_controls():
    assert issubclass(AirflowSkipException, Skip) and issubclass(
        AirflowSkipException, AirflowException
    )
    assert issubclass(AirflowFailException, Fail) and issubclass(AirflowSensorTimeout, Fail)
    assert not issubclass(AirflowException, Fail | Skip)  # an ordinary, retried failure


def test_get_current_context_outside_a_try_is_an_error():
    with pytest.raises(RuntimeError, match="outside a running task"):
        get_current_context()


def test_call_with_context_passes_the_names_the_callable_takes():
    context = {"ds": "2026-01-01", "ti": "TI", "params": {}}
    assert call_with_context(lambda ds, x: (ds, x), (), {"x": 1}, context) == ("2026-01-01", 1)
    assert call_with_context(lambda a, **kw: (a, sorted(kw)), (5,), {}, context) == (
        5, ["ds", "params", "ti"],
    )  # fmt: skip
    assert call_with_context(lambda: 3, (), {}, context) == 3


def test_short_circuit_and_sensor_decorators_and_a_module_level_task():
    @task(retries=1)
    def top(x):
        return x + 1

    with DAG("d", schedule=None) as d:

        @task.short_circuit
        def go():
            return True

        @task.sensor(poke_interval=5, timeout=60, execution_timeout=timedelta(seconds=9))
        def ready():
            return True

        one = top(1)
        two = top.override(task_id="other")(2)
        go() >> ready() >> one >> two
    assert d.tasks["go"].branch and d.tasks["ready"].sensor["mode"] == "poke"
    assert d.tasks["ready"].sensor["timeout"] == 60 and d.tasks["ready"].timeout == timedelta(
        seconds=9
    )
    assert d.tasks["top"].retries == 1 and d.tasks["other"].retries == 1
    assert top(1) == 2  # outside any DAG: the function itself


def test_a_file_sensor_in_poke_mode_waits_slot_free_and_serializes():
    with DAG("d", schedule=None) as d:
        FileSensor(task_id="f", filepath="/data/{{ ds }}.csv", mode="poke", poke_interval=30,
                   timeout=10, soft_fail=True)  # fmt: skip
    spec = serialize_dag(d)
    f = next(t for t in spec["tasks"] if t["task_id"] == "f")
    assert f["kind"] == "check" and f["check"]["filepath"] == "/data/{{ ds }}.csv"
    assert f["sensor"] == {"poke_interval": 10.0, "timeout": 10.0, "mode": "reschedule",
                           "soft_fail": True}  # fmt: skip


def test_every_exported_name_is_listed_in_the_porting_guide():
    text = (ROOT / "docs" / "porting.md").read_text()
    section = text[text.index("## `orchestrator.airflow`") :]
    listed = set(re.findall(r"`([A-Za-z_][A-Za-z_.]*)", section))
    missing = [name for name in airflow.__all__ if name not in listed]
    assert not missing, f"docs/porting.md's orchestrator.airflow section lacks {missing}"


def test_task_kinds_options_and_a_task_given_its_dag():
    d = DAG("d", schedule=None)

    @task(dag=d, retries=2)
    def given():
        return 1

    with d:

        @task.virtualenv(requirements=["tabulate==0.9.0"], python_version="3.11")
        def venv():
            return 1

        @task.bash(env={"A": "1"}, skip_on_exit_code=3)
        def command():
            return "echo hi"

    assert d.tasks["given"].retries == 2
    assert d.tasks["venv"].python_env["requirements"] == ["tabulate==0.9.0"]
    assert d.tasks["venv"].python_env["python"] == "python3.11"
    assert d.tasks["command"].kind == "python"


def test_shell_task_cwd_and_output_are_checked():
    with DAG("d", schedule=None) as d:
        d.shell("a", "pwd", cwd="/tmp", output_last_line=True)
        with pytest.raises(DagDefinitionError, match="cwd must be an absolute path"):
            d.shell("b", "pwd", cwd="relative")
        with pytest.raises(DagDefinitionError, match="only a shell task has cwd="):
            d.task(task_id="c", cwd="/tmp")(_one)
        with pytest.raises(DagDefinitionError, match="PythonOperator 'e': unknown argument cwd="):
            PythonOperator(task_id="e", python_callable=_one, cwd="/tmp")
    spec = serialize_dag(d)
    a = next(t for t in spec["tasks"] if t["task_id"] == "a")
    assert a["cwd"] == "/tmp" and a["output_last_line"] is True


def test_a_custom_operators_field_set_after_init_wires_its_reference_and_setups():
    from orchestrator.airflow import BaseOperator

    class Hello(BaseOperator):
        template_fields = ("name",)

        def __init__(self, name, **kwargs):
            super().__init__(**kwargs)
            self.name = name

        def execute(self, context):
            return self.name

    with DAG("d", schedule=None) as d:
        src = PythonOperator(task_id="src", python_callable=lambda: "x")
        hello = Hello(task_id="hello", name=src.output)
        create = EmptyOperator(task_id="create")
        delete = EmptyOperator(task_id="delete")
        create.as_setup() >> hello >> delete.as_teardown(setups=create)
    assert d.tasks["hello"].upstream_ids == {"src", "create"}
    assert d.tasks["create"].is_setup and d.tasks["delete"].is_teardown
    assert d.tasks["delete"].upstream_ids == {"hello", "create"}


def test_a_task_decorated_inside_a_dag_takes_override_as_airflows_does():
    with DAG("d", schedule=None) as d:

        @task.short_circuit()
        def check(condition):
            return condition

        @task(retries=2)
        def work():
            return 1

        yes = check.override(task_id="yes")(condition=True)
        yes >> work.override(task_id="w", retries=0)()
        check.override(task_id="no", ignore_downstream_trigger_rules=False)(condition=False)
    spec = {t["task_id"]: t for t in serialize_dag(d)["tasks"]}
    assert sorted(spec) == ["no", "w", "yes"]  # the decorated, never-called ones: no task
    assert d.tasks["w"].retries == 0 and d.tasks["w"].upstream_ids == {"yes"}
    assert d.tasks["yes"].branch and d.tasks["no"].branch
    with DAG("g", schedule=None) as g, TaskGroup("grp"):

        @task
        def step():
            return 1

        step() >> step.override(retries=3)() >> step.override(retries=2)()
    assert sorted(g.tasks) == ["grp.step", "grp.step__1", "grp.step__2"]  # no task_id=
    assert g.tasks["grp.step__1"].retries == 3 and g.tasks["grp.step__2"].retries == 2
    assert g.tasks["grp.step__2"].upstream_ids == {"grp.step__1"}
    with pytest.raises(DagDefinitionError, match="retires") as info, DAG("e", schedule=None):

        @task
        def f():
            return 1

        f.override(task_id="x", retires=3)  # the line the error names
    assert info.value.lineno == sys._getframe().f_lineno - 1
    assert info.value.fileloc == __file__


def test_airflows_template_filters_are_there_and_a_dags_own_win():
    from orchestrator.airflow.sdk import AIRFLOW_FILTERS

    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert {name: f(at) for name, f in AIRFLOW_FILTERS.items()} == {
        "ds": "2026-01-02",
        "ds_nodash": "20260102",
        "ts": "2026-01-02T03:04:05+00:00",
        "ts_nodash": "20260102T030405",
        "ts_nodash_with_tz": "20260102T030405+0000",
    }
    assert AIRFLOW_FILTERS["ds"](None) is None  # as Airflow's: no date, no string
    with DAG("d", schedule=None, user_defined_filters={"ds": str.upper, "up": str.upper}) as d:
        pass
    assert d.user_defined_filters["ds"] is str.upper and d.user_defined_filters["up"]
    assert d.user_defined_filters["ts_nodash"] is AIRFLOW_FILTERS["ts_nodash"]


@pytest.mark.parametrize(
    "sources",
    [{"env": [{"A": "1"}]}, {"bash_command": ["echo $A"], "env": [{"A": "1"}]}],
    ids=["env-alone", "env-beside-bash_command"],
)
def test_a_bash_operator_mapped_over_env_is_refused_never_dropped(sources):
    refused = pytest.raises(
        DagDefinitionError, match="only bash_command can be mapped here, not env"
    )
    with refused, DAG("d", schedule=None):
        BashOperator.partial(task_id="x").expand(**sources)
