"""@task.virtualenv / @task.external_python declarations: checked when the DAG file is
imported, each mistake naming the file and line of the decorator."""

from __future__ import annotations

import json
import sys

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag
from orchestrator.errors import DagDefinitionError


def here() -> int:
    return sys._getframe(1).f_lineno


def assert_error_at(err: pytest.ExceptionInfo[DagDefinitionError], line: int, *parts: str):
    exc = err.value
    assert str(exc).startswith(f"{__file__}:{line}: "), str(exc)
    for part in parts:
        assert part in str(exc), f"{part!r} not in {str(exc)!r}"


def test_a_virtualenv_task_keeps_its_source_without_decorators_and_its_lines():
    with DAG("venv", schedule=None) as dag:
        line = here() + 2  # the decorator's line

        @task.virtualenv(  # fmt: skip
            requirements=["tabulate==0.10.0", " six "],
            retries=2,
        )
        def pretty(ctx):
            import tabulate

            return tabulate.tabulate([[1]])

    t = dag.tasks["pretty"]
    assert t.kind == "python" and t.retries == 2
    assert t.python_env == {
        "kind": "virtualenv",
        "requirements": ["tabulate==0.10.0", "six"],
        "python": None,
        "system_site_packages": False,
    }
    src = t.python_source
    assert src["name"] == "pretty" and src["takes_context"] is True
    assert src["filename"] == __file__
    assert "@task" not in src["source"]
    # the def is on the same line as in this file, so tracebacks point here
    with open(__file__) as fh:
        mine = fh.read().splitlines()
    def_line = next(i for i, text in enumerate(mine) if text.strip() == "def pretty(ctx):")
    assert def_line > line
    assert src["source"].splitlines()[def_line].strip() == "def pretty(ctx):"
    namespace: dict = {}
    exec(compile(src["source"], __file__, "exec"), namespace)
    assert callable(namespace["pretty"])
    # the spec records the declaration (a change of requirements is a new version)
    [spec_task] = serialize_dag(dag)["tasks"]
    assert spec_task["python_env"]["requirements"] == ["tabulate==0.10.0", "six"]


def test_bare_virtualenv_and_external_python():
    with DAG("venv", schedule=None) as dag:

        @task.virtualenv
        def bare():
            return 1

        @task.external_python(python="/opt/venvs/x/bin/python", task_id="ext")
        def other():
            return 2

    assert dag.tasks["bare"].python_env["requirements"] == []
    assert dag.tasks["bare"].python_source["takes_context"] is False
    assert dag.tasks["ext"].python_env == {
        "kind": "external_python",
        "python": "/opt/venvs/x/bin/python",
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"requirements": ["-r /etc/passwd"]}, "is an installer option"),
        ({"requirements": ["--index-url=http://evil"]}, "is an installer option"),
        ({"requirements": ["ok\nrm -rf /"]}, "must be a one-line string"),
        ({"requirements": [""]}, "must be a one-line string"),
        ({"requirements": [3]}, "must be a one-line string"),
        ({"python": ""}, "python must be a path or command name"),
        ({"system_site_packages": "yes"}, "system_site_packages must be True or False"),
    ],
)
def test_bad_virtualenv_options_name_the_decorator_line(options, message):
    with pytest.raises(DagDefinitionError) as err, DAG("venv", schedule=None):
        line = here() + 2  # the decorator's line

        @task.virtualenv(**options)  # fmt: skip
        def f():
            return 1

    assert_error_at(err, line, message)


@pytest.mark.parametrize("python", [None, "python3", "bin/python", "/x\n/y"])
def test_external_python_needs_an_absolute_path(python):
    with pytest.raises(DagDefinitionError) as err, DAG("venv", schedule=None):
        line = here() + 2  # the decorator's line

        @task.external_python(python=python)  # fmt: skip
        def f():
            return 1

    assert_error_at(err, line, "needs python='/absolute/path/bin/python'")


def test_a_function_that_needs_its_dag_file_is_refused_at_import():
    with pytest.raises(DagDefinitionError) as err, DAG("venv", schedule=None):
        line = here() + 2  # the decorator's line

        @task.virtualenv  # fmt: skip
        def uses_a_global():
            return json.dumps([1])

    assert_error_at(err, line, "uses the DAG file's global name(s) json", "inside the function")

    limit = 3
    with pytest.raises(DagDefinitionError) as err, DAG("venv", schedule=None):
        line = here() + 2  # the decorator's line

        @task.virtualenv  # fmt: skip
        def uses_a_closure():
            return limit

    assert_error_at(err, line, "variables of its enclosing function (limit)")

    with pytest.raises(DagDefinitionError) as err, DAG("venv", schedule=None):
        line = here() + 2  # the decorator's line

        @task.virtualenv  # fmt: skip
        async def is_async():
            return 1

    assert_error_at(err, line, "an async function")


def test_builtins_and_names_imported_inside_are_fine():
    with DAG("venv", schedule=None) as dag:

        @task.virtualenv
        def fine(ctx):
            import json as j

            return j.dumps(sorted(len(str(x)) for x in range(3)))

    assert dag.tasks["fine"].python_source["name"] == "fine"
