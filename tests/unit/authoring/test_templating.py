"""Shell-command templating (orchestrator.authoring.templating and .shell_contexts): sandboxed,
strict, and no value ever in the text the shell parses: each travels in an environment
variable the command refers to, spelled for the quoting context it stands in."""

from __future__ import annotations

import doctest
import os
import random
import shutil
import subprocess

import pytest

from orchestrator.authoring import shell_contexts, templating
from orchestrator.authoring.templating import (
    TemplateRenderError,
    check_template,
    render_command,
    render_shell,
)

SHELLS = ["/bin/sh"] + [path for path in [shutil.which("bash")] if path]

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

# values an attacker would put in a run's conf; each must arrive exactly, run nothing
PAYLOADS = [
    "$(id>pwned)",
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    '"; touch pwned; "',
    '"$(touch pwned)"',
    "'$(touch pwned)'",
    "\ntouch pwned\n",
    "x\ny",
    "trailing newline\n",
    "\\",
    "ends in a backslash\\",
    "\\$(touch pwned)",
    "$HOME",
    "${HOME}",
    "${HOME:?boom}",
    "$((1+1))",
    "a[$(touch pwned)]",
    "EOF",
    "line\nEOF\ntouch pwned\nEOF\n",
    "\tEOF",
    "*",
    "~",
    "-n",
    "",
    " ",
    "}",
    ")",
    "`",
    "'",
    '"',
    "\\'",
    '\\"',
    "#",
    "!",
    "%s%n",
    "; touch pwned",
    "| touch pwned",
    "&& touch pwned",
    "> pwned",
    "\x1b[31mred\x1b[0m \x01\x7f",
    "ünïcödé ✓",
]

# (template with {X} where the value goes, what the command prints for value v)
CONTEXTS = {
    "bare": ("printf '%s' {X}", lambda v: v),
    "bare, glued to text": ("printf '%s' pre{X}post", lambda v: f"pre{v}post"),
    "single quotes": ("printf '%s' '{X}'", lambda v: v),
    "inside single-quoted text": ("printf '%s' 'pre {X} post'", lambda v: f"pre {v} post"),
    "double quotes": ("printf '%s' \"value: {X}\"", lambda v: f"value: {v}"),
    "backticks": ("x=`printf '%s.' {X}`; printf '%s' \"$x\"", lambda v: f"{v}."),
    "backticks in double quotes": (
        "printf '%s' \"<`printf '%s' {X}`.>\"",
        lambda v: f"<{v.rstrip(chr(10))}.>",
    ),
    "$( ) in double quotes": ("printf '%s' \"$(printf '%s.' {X})\"", lambda v: f"{v}."),
    "${var:-default}": ("printf '%s' \"${ORCH_UNSET_X:-{X}}\"", lambda v: v),
    "heredoc": ("cat <<EOF\n{X}\nEOF", lambda v: f"{v}\n"),
    "heredoc with text": (
        "cat <<EOF\nbefore '{X}' \"{X}\" after\nEOF",
        lambda v: f"before '{v}' \"{v}\" after\n",
    ),
    "heredoc <<-": ("cat <<-END\n\t{X}\n\tEND", lambda v: f"{v}\n"),
    "$( ) in a heredoc": ("cat <<EOF\n$(printf '%s.' {X})\nEOF", lambda v: f"{v}.\n"),
    "nested shell, positional": ('sh -c \'printf "%s" "$1"\' _ {X}', lambda v: v),
    "after a comment line": ("# it's a {X} comment\nprintf '%s' {X}", lambda v: v),
}


def run(command, shell="/bin/sh", cwd=None) -> bytes:
    """Run a rendered command the way the task runner does: script + its environment."""
    env = {**os.environ, **command.env}
    return subprocess.run(
        [shell, "-c", command.script], env=env, cwd=cwd, capture_output=True, timeout=10
    ).stdout


def sh_args(command) -> list[str]:
    """Run a rendered command and return the NUL-separated words printf got."""
    return run(command).decode().split("\0")[:-1]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("context", list(CONTEXTS))
def test_battery_no_payload_injects_in_any_context(context, shell, tmp_path):
    template, expected = CONTEXTS[context]
    source = template.replace("{X}", "{{ params.x }}")
    check_template(source)
    neutral = render_shell(source, {"params": {"x": "v"}}).script
    for payload in PAYLOADS:
        command = render_shell(source, {"params": {"x": payload}})
        assert command.script == neutral  # the text the shell parses never holds a value
        assert list(command.env.values()) == [payload]
        out = run(command, shell, cwd=tmp_path)
        assert os.listdir(tmp_path) == [], (context, payload, command.script)
        assert out.decode() == expected(payload), (context, payload, command.script)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_reported_attack_runs_nothing(shell, tmp_path):
    """Issue 12 item 8: `echo "value: {{ params.x }}"` with x="$(id>pwned)" ran id."""
    command = render_shell('echo "value: {{ params.x }}"', {"params": {"x": "$(id>pwned)"}})
    assert run(command, shell, cwd=tmp_path) == b"value: $(id>pwned)\n"
    assert not (tmp_path / "pwned").exists()
    assert command.script == 'echo "value: ${ORCH_V1}"'
    assert command.env == {"ORCH_V1": "$(id>pwned)"}
    assert command.display == 'echo "value: \\$(id>pwned)"'


@pytest.mark.parametrize("context", list(CONTEXTS))
def test_display_shows_the_values_and_means_the_same(context, tmp_path):
    template, expected = CONTEXTS[context]
    source = template.replace("{X}", "{{ params.x }}")
    for payload in ["a b", "it's", '"$(touch pwned)"', "plain"]:
        command = render_shell(source, {"params": {"x": payload}})
        if payload in ("a b", "plain"):
            assert payload in command.display  # readable: the value as written
        shown = templating.ShellCommand(script=command.display, env={}, display="")
        if context != "after a comment line":
            assert run(shown, cwd=tmp_path) == run(command, cwd=tmp_path), command.display
        assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "template",
    [
        "printf '%s' {{ params.x }}",
        "printf '%s' '{{ params.x }}'",
        "printf '%s' \"{{ params.x }}\"",
        "cat <<EOF\n{{ params.x }}\nEOF",
    ],
)
def test_nul_in_a_value_is_refused_with_a_clear_error(template):
    with pytest.raises(TemplateRenderError, match="contains a NUL byte, which no command"):
        render_shell(template, {"params": {"x": "a\0b; touch pwned"}})


def test_nul_in_a_template_is_refused():
    with pytest.raises(TemplateRenderError, match="NUL byte"):
        check_template("echo a\0b")


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("cat <<'EOF'\n{{ params.x }}\nEOF", r"heredoc whose delimiter is quoted \(<<'EOF'\)"),
        ('cat <<"EOF"\nhi {{ params.x }}\nEOF', "heredoc whose delimiter is quoted"),
        ("cat <<\\EOF\n{{ params.x }}\nEOF", "heredoc whose delimiter is quoted"),
        ("cat <<-'EOF'\n\t{{ params.x }}\n\tEOF", "heredoc whose delimiter is quoted"),
        ("echo $'tab\\t{{ params.x }}'", r"inside \$'...'"),
        ("echo \\{{ params.x }}", "follows a backslash"),
        ('echo "\\{{ params.x }}"', "follows a backslash"),
        ("cat <<{{ params.x }}\nEOF", r"cannot be \(part of\) a heredoc delimiter"),
    ],
)
def test_contexts_that_cannot_take_a_value_are_refused_at_parse_time(template, why):
    with pytest.raises(TemplateRenderError, match=why) as err:
        check_template(template)
    assert "{{ params.x }}" in str(err.value)
    with pytest.raises(TemplateRenderError, match=why):
        render_shell(template, {"params": {"x": "v"}})


def test_a_quoted_heredoc_without_values_and_values_after_it_are_fine(tmp_path):
    source = "cat <<'EOF'\n$HOME {{ not a value }}\nEOF\nprintf '%s' {{ params.x }}"
    with pytest.raises(TemplateRenderError):
        check_template(source)  # the {{ }} inside the quoted body is refused...
    source = "cat <<'EOF'\n$HOME `x`\nEOF\nprintf '%s' {{ params.x }}"
    check_template(source)  # ...but the body itself and values after it are fine
    command = render_shell(source, {"params": {"x": "$(touch pwned)"}})
    assert run(command, cwd=tmp_path) == b"$HOME `x`\n$(touch pwned)"
    assert os.listdir(tmp_path) == []


def test_arithmetic_takes_only_integers():
    command = render_shell("echo $(( {{ try_number }} * 10 ))", {"try_number": 3})
    assert run(command) == b"30\n"
    check_template("echo $(( {{ params.n }} + 1 ))")  # known only when it runs
    with pytest.raises(TemplateRenderError, match=r"inside \$\(\( \)\).*must be an integer"):
        render_shell("echo $(( {{ params.n }} + 1 ))", {"params": {"n": "a[$(touch pwned)]"}})


def test_a_dollar_before_a_value_is_a_literal_dollar():
    command = render_shell('echo ${{ params.n }} "${{ params.n }}"', {"params": {"n": 5}})
    assert run(command) == b"$5 $5\n"


def test_values_are_numbered_once_each_in_order_of_use():
    command = render_shell(
        "echo {{ ds }} {{ params.a }} {{ ds }} '{{ params.a }}'",
        {"ds": "2026-01-01", "params": {"a": "x y"}},
    )
    assert command.env == {"ORCH_V1": "2026-01-01", "ORCH_V2": "x y"}
    assert command.script == 'echo "${ORCH_V1}" "${ORCH_V2}" "${ORCH_V1}" \'\'"${ORCH_V2}"\'\''
    assert command.display == "echo 2026-01-01 'x y' 2026-01-01 'x y'"


def test_set_blocks_and_macros_carry_their_values(tmp_path):
    source = (
        "{% set greeting %}hello {{ params.who }}{% endset %}"
        "{% macro q(v) %}<{{ v }}>{% endmacro %}"
        "printf '%s|' {{ greeting }} {{ greeting | upper }} {{ q(params.who) }}"
        " {{ greeting.title() }} {{ greeting[0] }} {{ greeting | length }}"
    )
    command = render_shell(source, {"params": {"who": "$(touch pwned)"}})
    assert run(command, cwd=tmp_path) == (
        b"hello $(touch pwned)|HELLO $(TOUCH PWNED)|<$(touch pwned)>|Hello $(Touch Pwned)|h|20|"
    )
    assert os.listdir(tmp_path) == []
    assert list(command.env.values())[:3] == [
        "hello $(touch pwned)",
        "HELLO $(TOUCH PWNED)",
        "<$(touch pwned)>",
    ]


def test_a_value_cannot_forge_a_placeholder():
    forged = "\x000.0\x00"
    with pytest.raises(TemplateRenderError, match="NUL byte"):
        render_shell("echo {{ params.a }} {{ params.b }}", {"params": {"a": "x", "b": forged}})


FRAGMENTS = [
    *("'", '"', "`", "\\`", "$(", ")", "(", "((", "$((", "${", "}", "\\", "$", "$'", "#"),
    *("\n", " ", "\t", ";", "|", "-", "a", "echo ", "<<", "<<-", "<<<", "EOF", "'EOF'"),
    *("{{ x }}", "{{ x }}", "{% if y %}", "{% endif %}"),
]


def test_random_commands_never_leak_a_value_into_the_script(tmp_path):
    """Commands glued from shell punctuation: whatever the reading makes of them, a
    value is placed (as a variable) or refused, and running them never runs a value."""
    rng = random.Random(8)
    value = f"$(touch {tmp_path}/pwned) `touch {tmp_path}/pwned` '\"\nEOF\n; touch pwned"
    ran = 0
    for _ in range(3000):
        source = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14)))
        try:
            check_template(source)
            command = render_shell(source, {"x": value, "y": True})
        except TemplateRenderError:
            continue
        assert "\0" not in command.script and value not in command.script, source
        if ran < 80 and "{{" in source:
            ran += 1
            for shell in SHELLS:
                env = {**os.environ, **command.env}
                subprocess.run(
                    [shell, "-c", command.script],
                    env=env,
                    cwd=tmp_path,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
            assert os.listdir(tmp_path) == [], (source, command.script)
    assert ran == 80


@pytest.mark.parametrize("value", NASTY)
def test_param_reaches_sh_as_one_intact_argument(value):
    command = render_shell(
        "printf '%s\\0' {{ params.value }} {{ ds }}",
        {"params": {"value": value}, "ds": "2026-01-01"},
    )
    assert sh_args(command) == [value, "2026-01-01"]
    assert command.script == 'printf \'%s\\0\' "${ORCH_V1}" "${ORCH_V2}"'


def test_every_expression_is_quoted_even_computed_ones():
    params = {"a": "x y", "b": "; echo z"}
    command = render_shell(
        "printf '%s\\0' {{ params.a ~ params.b }} {{ params.a | upper }}", {"params": params}
    )
    assert sh_args(command) == ["x y; echo z", "X Y"]


def test_numbers_and_lists_become_one_word_each():
    command = render_shell(
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
    assert doctest.testmod(shell_contexts).failed == 0
