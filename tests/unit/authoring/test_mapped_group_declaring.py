"""Declaring mapped task groups (issue 25 item 7): the stored mapping of every task of
the group, the edges from the group's sources, ``tg__1``, and every misuse refused at
the DAG file's line."""

from __future__ import annotations

import pytest

from orchestrator import DAG, task, task_group
from orchestrator import dag as dag_decorator
from orchestrator.authoring.xcom_arg import MappedArgument, resolve
from orchestrator.errors import DagDefinitionError


def _tasks():
    """The tasks the groups below call, defined in the DAG being built."""

    @task
    def listing():
        return ["a", "b"]

    @task
    def clean(path):
        return path

    @task
    def load(row):
        return row

    T.update(listing=listing, clean=clean, load=load)
    return listing, clean, load


T: dict = {}


def test_every_task_of_the_group_is_mapped_over_the_groups_sources():
    with DAG("g") as dag:
        listing, clean, load = _tasks()

        @task_group
        def per_file(path, bucket):
            return load(clean(path))

        files = listing()
        out = per_file.partial(bucket="raw").expand(path=files)
    dag.validate()
    assert out.task.task_id == "per_file.load"
    mapping = {"kind": "expand", "args": [["path", {"task": "listing"}]], "partial": {},
               "group": "per_file"}  # fmt: skip
    assert dag.tasks["per_file.clean"].mapping == mapping
    assert dag.tasks["per_file.load"].mapping == mapping
    # the group's roots run after the source; inside, the call's edges
    assert dag.tasks["per_file.clean"].upstream_ids == {"listing"}
    assert dag.tasks["per_file.load"].upstream_ids == {"per_file.clean"}
    assert "clean" not in dag.tasks and "load" not in dag.tasks  # templates dropped


def test_a_group_called_twice_gets_the_next_free_id():
    with DAG("g") as dag:
        _tasks()

        @task_group
        def grp():
            T["clean"]("x")

        grp()
        grp()
        grp.expand  # noqa: B018 - the attribute exists on the decorated function
    assert sorted(dag.task_groups) == ["grp", "grp__1"]
    assert {"grp.clean", "grp__1.clean"} <= set(dag.tasks)


def test_a_mapped_argument_resolves_to_its_instances_item_and_its_keys():
    arg = MappedArgument("g", "row")
    assert resolve([arg, {"k": arg["id"]}], lambda _: None, "t", {}, {"row": {"id": 7}}) == [
        {"id": 7},
        {"k": 7},
    ]
    with pytest.raises(KeyError, match="has no argument 'row'"):
        resolve(arg, lambda _: None, "t", {}, {"other": 1})


@task_group
def fstring(path):
    T["clean"](f"{path}.csv")


@task_group
def leak(path):
    return path


@task_group
def inner(x):
    T["clean"](x)


@task_group
def outer(path):
    inner.expand(x=[1])


@task_group
def mapped_inside(path):
    @task
    def each(x):
        return x

    each.expand(x=[1, 2])


@task_group
def two(path, bucket):
    T["clean"](path)


@task_group
def empty(path):
    return None


# each case: what the DAG file writes, and the line the error must name (the call, or
# for a misuse inside the group function, the line in it)
CASES = {
    "fstring": (lambda: fstring.expand(path=["a"]), fstring.__wrapped__, "formatted into text"),
    "outside": (lambda: T["load"](MappedArgument("leak", "path")), None, "outside that group"),
    "nested": (lambda: outer.expand(path=["a"]), outer.__wrapped__, "cannot be nested"),
    "mapped_inside": (
        lambda: mapped_inside.expand(path=["a"]),
        None,
        "is mapped itself",
    ),
    "unknown_arg": (lambda: two.expand(path=["a"], nope=[1]), None, "does not take 'nope'"),
    "missing_arg": (lambda: two.expand(path=["a"]), None, "needs 'bucket'"),
    "no_tasks": (lambda: empty.expand(path=["a"]), None, "creates no task"),
    "bad_source": (
        lambda: two.partial(bucket=1).expand(path="not a list"),
        None,
        "needs an upstream task, a list or dag.param",
    ),
    "returns_arg": (lambda: leak.expand(path=["a"]), None, "returns its argument path"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_misuses_are_import_errors_naming_the_dag_files_line(case: str):
    action, inside, text = CASES[case]
    with DAG("g"):
        _tasks()
        with pytest.raises(DagDefinitionError) as exc:
            action()
    assert exc.value.fileloc == __file__
    assert text in str(exc.value), str(exc.value)
    if inside is not None:  # at the line of the group function that misuses it
        first, last = inside.__code__.co_firstlineno, inside.__code__.co_firstlineno + 3
        assert first <= exc.value.lineno <= last, str(exc.value)
    else:  # at the line of the lambda in CASES
        assert exc.value.lineno == action.__code__.co_firstlineno, str(exc.value)


def test_a_mapped_group_in_a_dag_decorator_and_over_a_param():
    @dag_decorator(schedule=None, params={"days": ["mon", "tue"]})
    def weekly():
        _tasks()

        @task_group
        def per_day(day):
            T["clean"](day)

        from orchestrator.authoring.building import _active

        per_day.expand(day=_active[-1].param("days"))

    built = weekly()
    built.validate()
    assert built.tasks["per_day.clean"].mapping["args"] == [["day", {"param": "days"}]]
