"""Declaring mapped tasks, and the import errors of bad declarations (file:line)."""

from __future__ import annotations

import sys

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.spec import DagSpec, serialize_dag
from orchestrator.errors import DagDefinitionError


def _line() -> int:
    return sys._getframe(1).f_lineno


def _refused(exc: pytest.ExceptionInfo, line: int, text: str) -> None:
    assert exc.value.fileloc == __file__
    assert exc.value.lineno == line, str(exc.value)
    assert text in str(exc.value)


def test_partial_expand_serializes_and_wires_the_source_upstream():
    with DAG("m", params={"n": [1, 2]}) as dag:

        @task
        def list_files(ctx):
            return []

        @task(retries=2)
        def load(ctx, path, bucket, n=1):
            return path

        @task
        def total(ctx):
            return 0

        load.partial(bucket="raw").expand(path=list_files, n=dag.param("n")) >> total
    assert load.upstream_ids == {"list_files"}
    spec = DagSpec.from_dict(serialize_dag(dag))
    assert spec.tasks["load"].mapping == {
        "kind": "expand",
        "args": [["path", {"task": "list_files"}], ["n", {"param": "n"}]],
        "partial": {"bucket": "raw"},
    }
    assert spec.mapped_tasks == {"load"}
    assert spec.has_mapped_upstream("total") and not spec.has_mapped_upstream("load")
    assert "mapping" not in serialize_dag(dag)["tasks"][0]  # unmapped tasks keep their hash


def test_shell_tasks_and_expand_kwargs_can_be_mapped():
    with DAG("m2") as dag:

        @task
        def pairs(ctx):
            return []

        dag.shell("echo", "echo {{ a }} {{ b }}").partial(b=1).expand_kwargs(pairs)
    assert dag.tasks["echo"].mapping["kind"] == "expand_kwargs"


def test_expand_over_something_that_is_not_a_task_list_or_param():
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def load(ctx, path):
            return path

        line = _line() + 1
        load.expand(path="s3://bucket/")
    _refused(exc, line, "expand(path=...) needs an upstream task, a list or dag.param(...)")


def test_a_mapped_argument_the_function_does_not_accept():
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def load(ctx, path):
            return path

        line = _line() + 1
        load.expand(path=["a"], colour=["red"])
    _refused(exc, line, "load() does not take the argument 'colour'")


def test_partial_and_expand_naming_the_same_argument():
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def load(ctx, path):
            return path

        line = _line() + 1
        load.partial(path="x").expand(path=["a"])
    _refused(exc, line, "'path' is given to both partial() and expand()")


def test_a_required_argument_nobody_gives_and_an_unknown_param():
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def load(ctx, path, bucket):
            return path

        line = _line() + 1
        load.expand(path=["a"])
    _refused(exc, line, "load() needs 'bucket'")
    with pytest.raises(DagDefinitionError) as exc, DAG("bad", params={"n": 1}) as dag:
        line = _line() + 1
        dag.param("m")
    _refused(exc, line, "DAG 'bad' has no param 'm' (params: n)")


def test_expand_twice_a_branch_task_http_task_and_a_shell_template_name():
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def load(ctx, path):
            return path

        load.expand(path=["a"])
        line = _line() + 1
        load.expand(path=["b"])
    _refused(exc, line, "mapped already")
    with pytest.raises(DagDefinitionError) as exc, DAG("bad") as dag:
        line = _line() + 1
        dag.shell("s", "echo {{ ds }}").expand(ds=["a"])
    _refused(exc, line, "'ds' cannot be a mapped argument of a shell command")
    with pytest.raises(DagDefinitionError) as exc, DAG("bad") as dag:
        line = _line() + 1
        dag.http("h", "http://127.0.0.1/").expand(x=[1])
    _refused(exc, line, "only Python and shell tasks can be mapped")
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def pick(ctx, x):
            return None

        line = _line() + 1
        pick.partial(x=object())
    _refused(exc, line, "partial() values must be JSON-serialisable")
