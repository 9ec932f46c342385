"""Shell-command templating (orchestrator.authoring.templating): sandboxed, strict, and every
expression shell-quoted so a parameter reaches ``sh -c`` as exactly one argument."""

from __future__ import annotations

import doctest
import subprocess

import pytest

from orchestrator.authoring import templating
from orchestrator.authoring.templating import TemplateRenderError, check_template, render_command

NASTY = [
    "plain",
    "with space",
    "a; rm -rf / #",
    "$(touch /tmp/pwned) `id` $HOME ${PATH}",
    'it\'s "quoted" \\ back\\slash',
    "new\nline\ttab",
    "glob * ? [a-z] ~",
    "&& || | > < >> 2>&1 &",
    "'",
    "",
    "-n",
    "ünïcödé ✓",
]


def sh_args(command: str) -> list[str]:
    """Run ``command`` with /bin/sh -c and return the NUL-separated words printf got."""
    out = subprocess.run(
        ["/bin/sh", "-c", command], capture_output=True, check=True, timeout=10
    ).stdout
    return out.decode().split("\0")[:-1]


@pytest.mark.parametrize("value", NASTY)
def test_param_reaches_sh_as_one_intact_argument(value):
    command = render_command(
        "printf '%s\\0' {{ params.value }} {{ ds }}",
        {"params": {"value": value}, "ds": "2026-01-01"},
    )
    assert sh_args(command) == [value, "2026-01-01"]


def test_every_expression_is_quoted_even_computed_ones():
    params = {"a": "x y", "b": "; echo z"}
    command = render_command(
        "printf '%s\\0' {{ params.a ~ params.b }} {{ params.a | upper }}", {"params": params}
    )
    assert sh_args(command) == ["x y; echo z", "X Y"]


def test_numbers_and_lists_become_one_word_each():
    command = render_command(
        "printf '%s\\0' {{ try_number }} {% for p in paths %}{{ p }} {% endfor %}",
        {"try_number": 2, "paths": ["a b", "c;d"]},
    )
    assert sh_args(command) == ["2", "a b", "c;d"]


@pytest.mark.parametrize(
    "attack",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ params.__class__.__init__.__globals__ }}",
        "{{ (0).__class__.__base__.__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
        "{{ lipsum.__globals__['os'].system('id') }}",
        "{{ params.update.__self__ }}{{ params.__getitem__.__func__ }}",
    ],
)
def test_sandbox_blocks_attribute_escapes(attack):
    with pytest.raises(TemplateRenderError) as err:
        render_command(attack, {"params": {}})
    message = str(err.value)
    assert message.startswith("cannot render command")
    assert "is unsafe" in message or "is undefined" in message, message


def test_str_format_escape_is_blocked():
    with pytest.raises(TemplateRenderError, match="'__class__' of 'dict' object is unsafe"):
        render_command("{{ '{0.__class__}'.format(params) }}", {"params": {}})


def test_undefined_variable_is_an_error_naming_it():
    with pytest.raises(TemplateRenderError, match="'missing_var' is undefined"):
        render_command("echo {{ missing_var }}", {"params": {}})
    with pytest.raises(TemplateRenderError, match="has no attribute 'nope'"):
        render_command("echo {{ params.nope }}", {"params": {"yes": 1}})


def test_undefined_in_a_condition_is_an_error_too():
    with pytest.raises(TemplateRenderError, match="'flag' is undefined"):
        render_command("{% if flag %}x{% endif %}", {})


def test_literal_text_is_left_alone():
    assert render_command("echo a  b | wc -c > /dev/null", {}) == "echo a  b | wc -c > /dev/null"


def test_check_template_reports_syntax_errors():
    check_template("echo {{ ds }} {% if x %}y{% endif %}")
    with pytest.raises(TemplateRenderError, match="bad command template"):
        check_template("echo {{ ds ")
    with pytest.raises(TemplateRenderError, match="bad command template"):
        check_template("{% for x in y %}")


def test_doctests():
    assert doctest.testmod(templating).failed == 0
