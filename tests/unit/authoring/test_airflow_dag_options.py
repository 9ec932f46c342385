"""Airflow's DAG vocabulary (issue 25 item 4): @dag, default_args, catchup, doc_md,
owner, and the import errors of bad values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orchestrator import DAG, Param, dag, setup, task, teardown
from orchestrator.authoring.spec import DagSpec, serialize_dag
from orchestrator.authoring.taskflow import invoke
from orchestrator.errors import DagDefinitionError

DEFAULTS = {
    "owner": "data",
    "retries": 3,
    "retry_delay": timedelta(minutes=2),
    "retry_exponential_backoff": False,
    "max_retry_delay": timedelta(minutes=20),
    "execution_timeout": timedelta(minutes=9),
    "pool": "db",
    "queue": "heavy",
    "priority_weight": 7,
    "trigger_rule": "all_done",
    "depends_on_past": True,
    "start_date": datetime(2026, 1, 1),
    "email": ["ops@example.com"],
}


def test_default_args_apply_to_every_task_unless_it_gives_its_own():
    with DAG("d", default_args=DEFAULTS) as d:

        @task
        def a(ctx):
            return 1

        @task(retries=0, owner="me", trigger_rule="all_success")
        def b(ctx):
            return 2

        sh = d.shell("sh", "echo hi")

    assert (a.retries, a.retry_delay, a.retry_exponential) == (3, timedelta(minutes=2), False)
    assert (a.max_retry_delay, a.timeout) == (timedelta(minutes=20), timedelta(minutes=9))
    assert (a.pool, a.queue, a.priority_weight, a.trigger_rule) == ("db", "heavy", 7, "all_done")
    assert a.depends_on_past and a.owner == "data" and sh.owner == "data"
    assert [n["target"] for n in a.alerts] == [["ops@example.com"]]
    assert (b.retries, b.owner, b.trigger_rule) == (0, "me", "all_success")
    assert d.start_date == datetime(2026, 1, 1, tzinfo=UTC)  # default_args' start_date
    assert d.owners == ["data", "me"]
    spec = serialize_dag(d)
    assert {t["task_id"]: t.get("owner") for t in spec["tasks"]} == {
        "a": "data",
        "b": "me",
        "sh": "data",
    }


def test_default_args_callbacks_and_a_teardown_keeps_its_rule():
    def failed(context):
        return None

    with DAG("cb", default_args={"on_failure_callback": failed, "trigger_rule": "all_done"}):

        @setup
        def make(ctx):
            return None

        @teardown
        def drop(ctx):
            return None

        make >> drop
    assert "on_failure" in make.callbacks
    assert drop.trigger_rule == "all_done_setup_success"


def test_an_unknown_default_arg_is_an_import_error_naming_it():
    with pytest.raises(DagDefinitionError) as exc:
        DAG("bad", default_args={"retries": 1, "sla": timedelta(hours=1)})
    assert exc.value.fileloc == __file__
    assert "default_args has 'sla', which is not a task option here" in str(exc.value)
    with pytest.raises(DagDefinitionError) as exc, DAG("bad2", default_args={"retries": -1}):

        @task
        def t(ctx):
            return None

    assert "retries must be an integer >= 0" in str(exc.value)


def test_catchup_maps_onto_misfire_and_a_contradiction_is_refused():
    assert DAG("c1", catchup=True).misfire == "backfill"
    assert DAG("c2", catchup=False).misfire == "coalesce"
    assert DAG("c3").misfire == "coalesce"
    assert DAG("c4", catchup=True, misfire="backfill").misfire == "backfill"
    with pytest.raises(DagDefinitionError, match="catchup=True is misfire='backfill'"):
        DAG("c5", catchup=True, misfire="skip")
    with pytest.raises(DagDefinitionError, match="catchup must be True or False"):
        DAG("c6", catchup="yes")


def test_doc_md_description_tags_and_controls_are_stored():
    d = DAG(
        "docs",
        doc_md="# Orders\nLoads **orders**.",
        description="orders",
        tags=["etl"],
        dagrun_timeout=timedelta(hours=1),
        max_active_tasks=4,
    )
    spec = DagSpec.from_dict(serialize_dag(d))
    assert spec.doc_md == "# Orders\nLoads **orders**."
    assert (spec.description, spec.tags) == ("orders", ("etl",))
    assert (spec.dagrun_timeout, spec.max_active_tasks) == (timedelta(hours=1), 4)
    with pytest.raises(DagDefinitionError, match="doc_md must be a string"):
        DAG("bad_doc", doc_md=3)


class _Ctx:
    params = {"limit": 7}

    def upstream(self, task_id):
        raise AssertionError(task_id)


def test_the_dag_decorator_names_the_dag_and_makes_parameters_params():
    @dag(schedule=None, default_args={"retries": 2}, tags=["x"])
    def orders(limit=100, mode=Param("delta", enum=["delta", "full"])):  # noqa: B008 - Airflow style
        @task
        def load(limit):
            return limit

        load(limit)

    built = orders()
    assert built.dag_id == "orders" and built.tags == ["x"]
    assert built.params["limit"] == 100 and built.params["mode"] == "delta"
    assert built.param_schemas["mode"]["enum"] == ["delta", "full"]
    assert built.tasks["load"].retries == 2
    assert invoke(built.tasks["load"], _Ctx(), None, lambda fn: True) == 7

    @dag
    def bare():
        @task
        def t():
            return None

    assert bare().dag_id == "bare"
    assert orders(limit=5).params["limit"] == 5  # a call's argument is the default


def test_a_task_takes_airflows_argument_names_too():
    def hook(*args):
        return None

    with DAG("names") as d:

        @task(execution_timeout=timedelta(minutes=3), on_failure_callback=hook)
        def a(ctx):
            return None

        sh = d.shell("sh", "echo", retry_exponential_backoff=False)

    assert a.timeout == timedelta(minutes=3) and "on_failure" in a.callbacks
    assert sh.retry_exponential is False
    same = "execution_timeout= and timeout= say the same"
    with pytest.raises(DagDefinitionError, match=same), DAG("both"):

        @task(execution_timeout=1, timeout=2)
        def b(ctx):
            return None


def test_a_dag_parameter_used_as_a_value_at_parse_time_is_refused():
    @dag(schedule=None)
    def report(day="2026-01-01"):
        @task
        def show(text):
            return text

        show(f"day {day}")

    with pytest.raises(DagDefinitionError) as exc:
        report()
    assert exc.value.fileloc == __file__
    assert "param 'day' has its value only when the run runs" in str(exc.value)
    assert "{{ params.day }}" in str(exc.value)
