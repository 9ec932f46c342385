"""Task groups (orchestrator.authoring.task_group) and the task-control options
(orchestrator.authoring.task_controls): ids, wiring, what is stored, and the errors a
DAG author sees, each naming the file and line (issue 14 items 5 and 6)."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest

from orchestrator import DAG, Fail, Skip, TaskGroup, task, task_group
from orchestrator.authoring.spec import DagSpec, serialize_dag, spec_hash
from orchestrator.errors import DagDefinitionError


def here() -> int:
    return sys._getframe(1).f_lineno


def upstream(dag: DAG) -> dict[str, set[str]]:
    return {t.task_id: set(t.upstream_ids) for t in dag.tasks.values()}


def assert_error_at(err: pytest.ExceptionInfo[DagDefinitionError], line: int, *parts: str):
    assert (err.value.fileloc, err.value.lineno) == (__file__, line), str(err.value)
    for part in parts:
        assert part in str(err.value), f"{part!r} not in {str(err.value)!r}"


def noop(ctx):
    return None


def test_group_ids_nest_and_wiring_connects_roots_and_leaves():
    with DAG("g") as dag:
        start = task(task_id="start")(noop)
        with TaskGroup("extract") as extract:
            a = task(task_id="a")(noop)
            b = task(task_id="b")(noop)
            a >> b
            with TaskGroup("inner") as inner:
                task(task_id="c")(noop)
        with TaskGroup("other") as other:
            task(task_id="d")(noop)
        end = task(task_id="end")(noop)
        start >> extract
        [extract, other] >> end
    assert list(dag.tasks) == [
        "start",
        "extract.a",
        "extract.b",
        "extract.inner.c",
        "other.d",
        "end",
    ]
    assert upstream(dag) == {
        "start": set(),
        "extract.a": {"start"},  # a root of extract
        "extract.b": {"extract.a"},
        "extract.inner.c": {"start"},  # a root too: nothing upstream of it inside
        "other.d": set(),
        "end": {"extract.b", "extract.inner.c", "other.d"},  # every leaf
    }
    assert inner.path == "extract.inner" and inner.parent is extract
    assert dag.tasks["extract.inner.c"].group == "extract.inner"
    assert dag.tasks["start"].group is None
    assert set(dag.task_groups) == {"extract", "extract.inner", "other"}


def test_group_to_group_and_decorator_form():
    with DAG("g") as dag:

        @task_group
        def clean():
            task(task_id="x")(noop) >> task(task_id="y")(noop)

        @task_group(group_id="publish")
        def pub(n):
            for i in range(n):
                task(task_id=f"p{i}")(noop)

        first = clean()
        second = pub(2)
        assert first >> second is second
    assert upstream(dag) == {
        "clean.x": set(),
        "clean.y": {"clean.x"},
        "publish.p0": {"clean.y"},
        "publish.p1": {"clean.y"},
    }


def test_the_group_path_is_stored_and_a_dag_without_groups_keeps_its_hash():
    with DAG("plain") as before:
        task(task_id="a")(noop)
    data = serialize_dag(before)
    assert "group" not in data["tasks"][0] and "priority_weight" not in data["tasks"][0]
    with DAG("grouped") as dag, TaskGroup("extract"):
        task(task_id="a")(noop)
    spec = DagSpec.from_dict(serialize_dag(dag))
    assert spec.tasks["extract.a"].group == "extract"
    assert spec_hash(serialize_dag(before)) == spec_hash(data)


@pytest.mark.parametrize("bad", ["a.b", "", "-x", "a b", 7, "x" * 251])
def test_a_bad_group_id_is_an_error_at_its_line(bad):
    with pytest.raises(DagDefinitionError) as err, DAG("g"):
        line = here() + 1
        TaskGroup(bad)
    assert_error_at(err, line, "group_id")


def test_a_duplicate_group_or_a_group_named_like_a_task_is_an_error_at_its_line():
    with pytest.raises(DagDefinitionError) as err, DAG("g"):
        first = here() + 1
        with TaskGroup("extract"):
            task(task_id="a")(noop)
        line = here() + 1
        with TaskGroup("extract"):
            pass
    assert_error_at(err, line, "duplicate task group 'extract'", f"line {first}")
    with pytest.raises(DagDefinitionError) as err, DAG("g"):
        task(task_id="load")(noop)
        line = here() + 1
        TaskGroup("load")
    assert_error_at(err, line, "has the id of a task")
    with pytest.raises(DagDefinitionError) as err, DAG("g"):
        with TaskGroup("load"):
            task(task_id="a")(noop)
        line = here() + 1
        task(task_id="load")(noop)
    assert_error_at(err, line, "is the id of a task group")


def test_a_group_outside_a_dag_or_an_empty_group_wired_is_an_error():
    with pytest.raises(DagDefinitionError) as err:
        line = here() + 1
        TaskGroup("lonely")
    assert_error_at(err, line, "outside a DAG")
    with pytest.raises(DagDefinitionError) as err, DAG("g"):
        t = task(task_id="t")(noop)
        empty = TaskGroup("empty")
        line = here() + 1
        t >> empty
    assert_error_at(err, line, "'empty' has no tasks")


def test_a_group_id_too_long_with_its_task_id_is_an_error():
    with pytest.raises(DagDefinitionError) as err, DAG("g"), TaskGroup("g" * 200):
        line = here() + 1
        task(task_id="t" * 60)(noop)
    assert_error_at(err, line, "invalid task_id")


# ------------------------------------------------------------------------ task controls


def test_task_controls_are_stored_only_when_set():
    def hook(ctx):
        return None

    with DAG("c", max_active_tasks=2, dagrun_timeout=90) as dag:
        t = task(
            task_id="t",
            priority_weight=5,
            depends_on_past=True,
            max_active_tis_per_dag=1,
            on_success=hook,
            on_execute=hook,
        )(noop)
        dag.shell("sh", "exit 3", skip_on_exit_code=3)
        dag.shell("plain", "true")
    spec = DagSpec.from_dict(serialize_dag(dag))
    ts = spec.tasks["t"]
    assert (ts.priority_weight, ts.depends_on_past, ts.max_active_tis_per_dag) == (5, True, 1)
    assert set(ts.callbacks) == {"on_success", "on_execute"}
    assert spec.tasks["sh"].skip_on_exit_code == 3
    assert spec.tasks["plain"].skip_on_exit_code == 99  # Airflow's default
    assert spec.max_active_tasks == 2 and spec.dagrun_timeout == timedelta(seconds=90)
    assert t.priority_weight == 5


@pytest.mark.parametrize(
    ("options", "part"),
    [
        ({"priority_weight": "high"}, "priority_weight must be an integer"),
        ({"priority_weight": True}, "priority_weight must be an integer"),
        ({"priority_weight": 2**40}, "priority_weight must be an integer"),
        ({"depends_on_past": "yes"}, "depends_on_past must be True or False"),
        ({"max_active_tis_per_dag": 0}, "max_active_tis_per_dag must be an integer from 1"),
        ({"on_success": "print"}, "on_success must be a function"),
        ({"on_execute": 3}, "on_execute must be a function"),
    ],
)
def test_bad_task_controls_are_errors_at_their_line(options, part):
    with pytest.raises(DagDefinitionError) as err, DAG("c"):
        line = here() + 1
        task(task_id="t", **options)(noop)
    assert_error_at(err, line, "task 't'", part)


@pytest.mark.parametrize(
    ("options", "part"),
    [
        ({"max_active_tasks": 0}, "max_active_tasks must be an integer from 1"),
        ({"dagrun_timeout": -5}, "dagrun_timeout must be a positive"),
        ({"dagrun_timeout": "1h"}, "dagrun_timeout must be a positive"),
    ],
)
def test_bad_dag_controls_are_errors_at_their_line(options, part):
    with pytest.raises(DagDefinitionError) as err:
        line = here() + 1
        DAG("c", **options)
    assert_error_at(err, line, "DAG 'c'", part)


def test_a_bad_skip_exit_code_is_an_error_at_its_line():
    with pytest.raises(DagDefinitionError) as err, DAG("c") as dag:
        line = here() + 1
        dag.shell("sh", "true", skip_on_exit_code=300)
    assert_error_at(err, line, "skip_on_exit_code")


def test_skip_and_fail_are_exceptions_tasks_raise():
    assert issubclass(Skip, Exception) and issubclass(Fail, Exception)
    assert str(Skip("nothing to do")) == "nothing to do"
