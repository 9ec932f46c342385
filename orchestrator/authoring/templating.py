"""Rendering shell-task commands with Jinja2, safely.

The environment is sandboxed and strict: an unknown variable is an error, not an
empty string. Every ``{{ expression }}`` is shell-quoted on output, so values (params
above all) reach the command only as single quoted arguments and can never inject
shell syntax. Write ``{{ params.path }}`` and it becomes ``'/tmp/my dir'``.

>>> render_command("echo {{ params.msg }}", {"params": {"msg": "a; rm -rf /"}})
"echo 'a; rm -rf /'"
"""

import shlex
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from orchestrator.errors import OrchestratorError


def _quote(value: Any) -> str:
    return shlex.quote(str(value))


_ENV = SandboxedEnvironment(undefined=StrictUndefined, finalize=_quote, autoescape=False)


class TemplateRenderError(OrchestratorError):
    pass


def check_template(source: str) -> None:
    """Raise TemplateRenderError if ``source`` is not valid Jinja2 syntax."""
    try:
        _ENV.parse(source)
    except TemplateError as exc:
        raise TemplateRenderError(f"bad command template: {exc}") from exc


def render_command(source: str, variables: dict[str, Any]) -> str:
    try:
        return _ENV.from_string(source).render(**variables)
    except TemplateError as exc:
        raise TemplateRenderError(f"cannot render command {source!r}: {exc}") from exc
