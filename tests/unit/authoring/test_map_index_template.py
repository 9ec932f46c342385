"""``map_index_template`` checked when the DAG file is parsed (issue 25 item 7), and
rendered per item."""

from __future__ import annotations

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.map_index_template import render
from orchestrator.errors import DagDefinitionError


def _validate(template: str, *, mapped: bool = True, kwargs: bool = False) -> None:
    with DAG("d") as dag:

        @task(map_index_template=template)
        def load(path, bucket="b"):
            return path

        if kwargs:
            load.expand_kwargs([{"path": "a", "bucket": "b"}])
        elif mapped:
            load.partial(bucket="raw").expand(path=["a"])
    dag.validate()


def test_a_template_over_the_instances_arguments_is_accepted():
    _validate("{{ path }} in {{ bucket | upper }}")
    _validate("{{ anything }}", kwargs=True)  # expand_kwargs: keys known with the items


@pytest.mark.parametrize(
    "template, mapped, text",
    [
        ("{{ pth }}", True, "uses 'pth', which is not an argument of its instances"),
        ("{{ path }", True, "bad map_index_template"),
        ("{{ path }}", False, "this task is not mapped"),
        ("", True, "must be a non-empty string"),
    ],
)
def test_a_wrong_template_is_an_import_error_naming_the_task(template, mapped, text):
    with pytest.raises(DagDefinitionError, match="task 'load'") as exc:
        _validate(template, mapped=mapped)
    assert text in str(exc.value)
    assert exc.value.fileloc == __file__


def test_render_names_an_item_or_gives_none_when_it_cannot():
    assert render("{{ p }}-{{ n + 1 }}", {"p": "x", "n": 1}) == "x-2"
    assert render("{{ p.upper() }}", {"p": 3}) is None
    assert render("{{ p }}", {"p": "y" * 300}) == "y" * 250
    assert render("{{ p }}", {"p": "   "}) is None
    assert render(None, {"p": 1}) is None
    # the sandbox: no reach into Python internals
    assert render("{{ p.__class__.__mro__ }}", {"p": "x"}) is None
