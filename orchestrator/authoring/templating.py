"""Rendering shell-task commands with Jinja2, safely.

The environment is sandboxed and strict: an unknown variable is an error, not an
empty string. No ``{{ expression }}`` value is ever written into the command the shell
parses: each becomes a reference to an environment variable of the command's process
(``ORCH_V1``, ``ORCH_V2``, ...) holding the value, spelled for the quoting context it
stands in (:mod:`.shell_contexts`), so values (params above all) can never inject
shell syntax, in a bare word, in single or double quotes, in backticks or ``$( )``, or
in a heredoc. :func:`render_shell` gives the script, its environment and a readable
display text with the values written in.

>>> cmd = render_shell('echo "value: {{ params.x }}"', {"params": {"x": "$(id>pwned)"}})
>>> cmd.script, cmd.env
('echo "value: ${ORCH_V1}"', {'ORCH_V1': '$(id>pwned)'})
>>> cmd.display
'echo "value: \\\\$(id>pwned)"'
>>> render_command("echo {{ params.msg }}", {"params": {"msg": "a; rm -rf /"}})
"echo 'a; rm -rf /'"
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, TemplateError, pass_context
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment

from orchestrator.authoring.shell_contexts import (
    ShellContextError,
    marker,
    marker_pattern,
    place_values,
)
from orchestrator.errors import OrchestratorError

ENV_PREFIX = "ORCH_V"


class TemplateRenderError(OrchestratorError):
    pass


@dataclass(frozen=True)
class ShellCommand:
    """A rendered shell command: run ``["/bin/sh", "-c", script]`` with ``env`` added to
    its environment; show ``display`` (the same command with the values written in)."""

    script: str
    env: dict[str, str]
    display: str


@dataclass
class _Render:
    nonce: str
    values: list[str]


_RENDER: ContextVar[_Render | None] = ContextVar("orchestrator_shell_render", default=None)


def _resolve(value: Any) -> Any:
    """Text rendered inside the template ({% set %} blocks, macros) holds markers: the
    values they stand for, so filters, methods and the final value see those."""
    render = _RENDER.get()
    if render is not None and isinstance(value, str) and "\x00" in value:
        return marker_pattern(render.nonce).sub(lambda m: render.values[int(m[1])], value)
    return value


@pass_context  # a context-taking finalize also keeps Jinja from folding constants early
def _mark(context: Context, value: Any) -> str:
    """Stand-in for one ``{{ ... }}`` value: a marker the shell reading resolves."""
    render = _RENDER.get()
    if render is None:  # pragma: no cover - only render_shell renders with this env
        raise TemplateRenderError("shell commands render through render_shell")
    render.values.append(_resolve(str(value)))
    return marker(render.nonce, len(render.values) - 1)


def _resolving(function: Any) -> Any:
    @functools.wraps(function)  # keeps Jinja's pass_context & co. marks
    def call(*args: Any, **kwargs: Any) -> Any:
        args = tuple(_resolve(a) for a in args)
        return function(*args, **{k: _resolve(v) for k, v in kwargs.items()})

    return call


class _ShellEnvironment(SandboxedEnvironment):
    def getitem(self, obj: Any, argument: Any) -> Any:
        return super().getitem(_resolve(obj), argument)

    def getattr(self, obj: Any, attribute: str) -> Any:
        return super().getattr(_resolve(obj), attribute)


_ENV = _ShellEnvironment(undefined=StrictUndefined, finalize=_mark, autoescape=False)
_ENV.filters = {name: _resolving(f) for name, f in _ENV.filters.items()}
_ENV.tests = {name: _resolving(f) for name, f in _ENV.tests.items()}
# env= values and other text templates: values are written in (they are data there)
TEXT_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
_OVERLAYS: dict[tuple[int, tuple[tuple[str, int], ...]], tuple[Any, SandboxedEnvironment]] = {}
_MAX_OVERLAYS = 64


def with_filters(
    env: SandboxedEnvironment, filters: Mapping[str, Callable[..., Any]] | None
) -> SandboxedEnvironment:
    """``env`` with the DAG's ``user_defined_filters`` added (issue 25); built once per
    set of filters (a task process keeps its DAG objects, so they are the same)."""
    if not filters:
        return env
    key = (id(env), tuple(sorted((name, id(fn)) for name, fn in filters.items())))
    hit = _OVERLAYS.get(key)
    if hit is None:
        if len(_OVERLAYS) >= _MAX_OVERLAYS:
            _OVERLAYS.clear()
        overlay = env.overlay()
        wrap = _resolving if env is _ENV else (lambda f: f)
        overlay.filters = {**env.filters, **{name: wrap(fn) for name, fn in filters.items()}}
        hit = _OVERLAYS[key] = (filters, overlay)  # keeps the functions (and ids) alive
    return hit[1]


def render_text(
    source: str,
    variables: dict[str, Any],
    filters: Mapping[str, Callable[..., Any]] | None = None,
    what: str = "template",
) -> str:
    """``source`` rendered as text (values written in); TemplateRenderError naming
    ``what``."""
    try:
        return with_filters(TEXT_ENV, filters).from_string(source).render(**variables)
    except TemplateError as exc:
        raise TemplateRenderError(f"cannot render {what} {source[:200]!r}: {exc}") from exc


def render_env(
    env: Mapping[str, str],
    variables: dict[str, Any],
    filters: Mapping[str, Callable[..., Any]] | None = None,
) -> dict[str, str]:
    """A task's ``env=`` with each value rendered (issue 25): a value goes into the
    process's environment as it is, so it can never be read as shell syntax."""
    out = {}
    for key, source in env.items():
        value = render_text(source, variables, filters, f"env[{key!r}]")
        if "\x00" in value:
            raise TemplateRenderError(
                f"env[{key!r}]: the rendered value contains a NUL byte, which no "
                f"environment variable can hold: {value[:80]!r}"
            )
        try:
            value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            raise TemplateRenderError(
                f"env[{key!r}]: the rendered value cannot be encoded ({exc.reason})"
            ) from None
        out[key] = value
    return out


def check_template(source: str) -> None:
    """Raise TemplateRenderError if ``source`` is not valid Jinja2 syntax, or puts an
    expression where the shell cannot receive a value (a quoted heredoc, ``$'...'``)."""
    if "\x00" in source:
        raise TemplateRenderError("bad command template: it contains a NUL byte")
    try:
        _ENV.parse(source)
        tokens = list(_ENV.lexer.tokeniter(source, None))
    except TemplateError as exc:
        raise TemplateRenderError(f"bad command template: {exc}") from exc
    # the command's text with every {{ }} as a marker and every {% %} left out: both
    # branches of an {% if %} are read, each loop body once
    nonce, text, labels, expression = "0", [], [], None
    for _, kind, value in tokens:
        if kind == "variable_begin":
            expression = [value]
        elif expression is not None:
            expression.append(value)
            if kind == "variable_end":
                text.append(marker(nonce, len(labels)))
                labels.append("".join(expression).strip())
                expression = None
        elif kind == "data":
            text.append(value)
    try:
        place_values("".join(text), None, [], nonce, labels)
    except ShellContextError as exc:
        raise TemplateRenderError(f"bad command template: {exc}") from None


def render_shell(
    source: str,
    variables: dict[str, Any],
    filters: Mapping[str, Callable[..., Any]] | None = None,
) -> ShellCommand:
    """Render ``source``; every value travels in ``env``, never in ``script``.
    ``filters``: the DAG's ``user_defined_filters``."""
    if "\x00" in source:
        raise TemplateRenderError(f"cannot render command {source!r}: it contains a NUL byte")
    render = _Render(nonce=str(secrets.randbelow(10**12)).zfill(12), values=[])
    token = _RENDER.set(render)
    try:
        text = with_filters(_ENV, filters).from_string(source).render(**variables)
    except TemplateError as exc:
        raise TemplateRenderError(f"cannot render command {source!r}: {exc}") from exc
    finally:
        _RENDER.reset(token)
    # one variable per distinct value the text refers to, numbered in order of use
    names, env, by_value = [""] * len(render.values), {}, {}
    for found in marker_pattern(render.nonce).finditer(text):
        value = render.values[int(found[1])]
        _check_value(source, value)
        if value not in by_value:
            by_value[value] = f"{ENV_PREFIX}{len(by_value) + 1}"
            env[by_value[value]] = value
        names[int(found[1])] = by_value[value]
    try:
        script, display = place_values(text, render.values, names, render.nonce)
    except ShellContextError as exc:
        raise TemplateRenderError(f"cannot render command {source!r}: {exc}") from None
    return ShellCommand(script=script, env=env, display=display)


def _check_value(source: str, value: str) -> None:
    if "\x00" in value:
        raise TemplateRenderError(
            f"cannot render command {source!r}: a {{{{ ... }}}} value contains a NUL "
            f"byte, which no command can receive: {value[:80]!r}"
        )
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise TemplateRenderError(
            f"cannot render command {source!r}: a {{{{ ... }}}} value cannot be "
            f"encoded for the command's environment ({exc.reason}): {value[:80]!r}"
        ) from None


def render_command(source: str, variables: dict[str, Any]) -> str:
    """The readable text of the rendered command (``render_shell(...).display``)."""
    return render_shell(source, variables).display
