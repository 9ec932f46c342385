"""Setup and teardown tasks as a DAG file declares them (issue 25): ``@setup``,
``@teardown``, ``.as_setup()``, ``.as_teardown(setups=...)``, what is stored, task
groups passing over teardowns, and every misuse an error naming file:line."""

from __future__ import annotations

import sys

import pytest

from orchestrator import DAG, TaskGroup, setup, task, teardown
from orchestrator.authoring.spec import DagSpec, serialize_dag, spec_hash
from orchestrator.errors import DagDefinitionError


def here() -> int:
    return sys._getframe(1).f_lineno


def noop(ctx):
    return None


def assert_error_at(err: pytest.ExceptionInfo[DagDefinitionError], line: int, *parts: str):
    assert (err.value.fileloc, err.value.lineno) == (__file__, line), str(err.value)
    for part in parts:
        assert part in str(err.value), f"{part!r} not in {str(err.value)!r}"


def spec_of(dag: DAG) -> DagSpec:
    return DagSpec.from_dict(serialize_dag(dag))


def test_decorators_mark_the_tasks_and_the_teardown_gets_its_rule():
    with DAG("st") as dag:

        @setup
        def create(ctx):
            return "cluster-1"

        @task
        def query(ctx):
            return 1

        @teardown
        def delete(ctx):
            return None

        create >> query >> delete
        create >> delete
    spec = spec_of(dag)
    assert spec.tasks["create"].is_setup and not spec.tasks["create"].is_teardown
    assert spec.tasks["delete"].is_teardown
    assert spec.tasks["delete"].trigger_rule == "all_done_setup_success"
    assert not spec.tasks["delete"].on_failure_fail_dagrun
    assert spec.run_leaves == ("query",)
    assert create(None) == "cluster-1"  # outside a run, still the function


def test_decorators_stack_on_task_and_take_its_options():
    with DAG("st") as dag:

        @setup
        @task(retries=3)
        def create(ctx):
            return None

        @teardown(on_failure_fail_dagrun=True)
        @task(task_id="remove")
        def delete(ctx):
            return None

        @setup(retries=2)
        def other(ctx):
            return None

        create >> delete
    spec = spec_of(dag)
    assert spec.tasks["create"].is_setup and spec.tasks["create"].retries == 3
    assert spec.tasks["other"].is_setup and spec.tasks["other"].retries == 2
    assert spec.tasks["remove"].is_teardown and spec.tasks["remove"].on_failure_fail_dagrun
    assert spec.run_leaves == ("other", "remove")


def test_as_teardown_marks_its_setups_and_wires_them_before_it():
    with DAG("st") as dag:
        create = dag.shell("create", "echo make")
        grant = dag.shell("grant", "echo grant")
        work = dag.shell("work", "echo work")
        delete = dag.shell("delete", "echo rm")
        [create, grant] >> work >> delete.as_teardown(setups=[create, grant])
        extra = dag.shell("extra", "echo x").as_setup()
    assert create.is_setup and grant.is_setup and extra.is_setup
    assert delete.is_teardown and delete.upstream_ids == {"create", "grant", "work"}
    assert delete.trigger_rule == "all_done_setup_success"
    assert spec_of(dag).setup_teardown.clear_targets("work") == [
        "work",
        "create",
        "delete",
        "grant",
    ]


def test_a_dag_without_setups_keeps_its_version_hash():
    with DAG("plain") as dag:
        a = dag.shell("a", "echo a")
        b = dag.shell("b", "echo b")
        a >> b
    data = serialize_dag(dag)
    assert not any(key in t for t in data["tasks"] for key in ("is_setup", "is_teardown"))
    assert spec_hash(data) == spec_hash(serialize_dag(dag))


def test_a_teardown_trigger_rule_is_not_configurable():
    with DAG("st"):
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            teardown(trigger_rule="one_success")
    assert_error_at(err, line, "all_done_setup_success", "trigger_rule='one_success'")
    with DAG("st"):
        t = task(task_id="t", trigger_rule="all_failed")(noop)
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            t.as_teardown()
    assert_error_at(err, line, "task 't'", "drop trigger_rule='all_failed'")


def test_a_task_is_a_setup_or_a_teardown_not_both():
    with DAG("st"):
        t = task(task_id="t")(noop).as_setup()
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            t.as_teardown()
    assert_error_at(err, line, "task 't' is a setup", "not both")
    with DAG("st"):
        u = task(task_id="u")(noop).as_teardown()
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            setup(u)
    assert_error_at(err, line, "task 'u' is a teardown")


def test_setups_must_be_tasks_and_not_the_teardown_itself():
    with DAG("st"):
        t = task(task_id="t")(noop)
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            t.as_teardown(setups="create")
    assert_error_at(err, line, "as_teardown(setups=...) takes tasks", "'create'")
    with DAG("st"):
        t = task(task_id="t")(noop)
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            t.as_teardown(setups=t)
    assert_error_at(err, line, "cannot be its own setup")
    with DAG("st"):
        t = task(task_id="t")(noop)
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            t.as_teardown(on_failure_fail_dagrun="yes")
    assert_error_at(err, line, "on_failure_fail_dagrun must be True or False")


def test_a_setup_of_another_dag_is_refused():
    with DAG("one"):
        s = task(task_id="s")(noop)
    with DAG("two"):
        t = task(task_id="t")(noop)
        line = here() + 2
        with pytest.raises(DagDefinitionError) as err:
            t.as_teardown(setups=s)
    assert_error_at(err, line, "setup 's' belongs to DAG 'one', not 'two'")


def test_a_task_right_after_a_setup_must_be_all_success():
    with pytest.raises(DagDefinitionError) as err, DAG("st"):
        s = task(task_id="s")(noop).as_setup()
        line = here() + 1
        w = task(task_id="w", trigger_rule="all_done")(noop)
        s >> w
    assert_error_at(err, line, "task 'w' runs right after setup 's'", "'all_success'")


def test_a_group_ending_in_a_teardown_is_wired_from_the_work_before_it():
    """Airflow: teardowns are ignored when setting dependencies against task groups."""
    with DAG("st") as dag:
        with TaskGroup("g") as g:
            s = task(task_id="s")(noop)
            w = task(task_id="w")(noop)
            t = task(task_id="t")(noop)
            s >> w >> t.as_teardown(setups=s)
        after = task(task_id="after")(noop)
        g >> after
    assert after.upstream_ids == {"g.w"}
    assert [x.task_id for x in g.roots()] == ["g.s"]
    assert dag.tasks["g.t"].upstream_ids == {"g.s", "g.w"}


def test_the_teardown_as_a_context_manager_wraps_the_tasks_made_inside():
    """Airflow's ``with delete.as_teardown(setups=create): ...``."""
    with DAG("st") as dag:
        create = task(task_id="create")(noop)
        delete = task(task_id="delete")(noop)
        with delete.as_teardown(setups=create):
            a = task(task_id="a")(noop)
            b = task(task_id="b")(noop)
            c = task(task_id="c")(noop)
            a >> b
        after = task(task_id="after")(noop)
    assert a.upstream_ids == {"create"} and c.upstream_ids == {"create"}
    assert b.upstream_ids == {"a"}
    assert delete.upstream_ids == {"create", "b", "c"}
    assert after.upstream_ids == set()
    assert spec_of(dag).setup_teardown.clear_targets("b") == ["b", "create", "delete"]


def test_a_setup_as_a_context_manager_runs_before_and_its_teardowns_after():
    with DAG("st"):
        create = task(task_id="create")(noop)
        delete = task(task_id="delete")(noop).as_teardown(setups=create)
        with create:
            w = task(task_id="w")(noop)
    assert w.upstream_ids == {"create"} and delete.upstream_ids == {"create", "w"}


def test_only_a_setup_or_a_teardown_opens_a_with_block():
    with DAG("st"):
        plain = task(task_id="plain")(noop)
        line = here() + 1
        with pytest.raises(DagDefinitionError) as err, plain:
            pass
    assert_error_at(err, line, "task 'plain' is neither a setup nor a teardown")
