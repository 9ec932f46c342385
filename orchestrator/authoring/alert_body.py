"""A webhook's body template: Jinja2, sandboxed, every value written as JSON.

``webhook(url, body=...)`` takes a Jinja2 template of the JSON body, rendered with the
alert's payload (``kind``, ``dag_id``, ``run_id``, ``task_id``, ``try_number``,
``logical_date``, ``message``, ``created_at``, ``alert_id``, ``version``; the whole of
it as ``alert``). Every ``{{ ... }}`` is written as one JSON value (a string quoted and
escaped, a number, ``null``), so no value, however hostile, can change the body's
structure or be read as template syntax: build a string inside the expression
(``{{ "failed: " ~ message }}``), not around it. The template is checked when the DAG
file is imported: a syntax error, an unknown name or a body that is not JSON is an
import error naming the file and line of the declaration.

>>> render_body('{"text": {{ "run " ~ run_id ~ " failed" }}, "try": {{ try_number }}}',
...             {"run_id": 'x", "admin": true', "try_number": 2})
'{"text": "run x\\\\", \\\\"admin\\\\": true failed", "try": 2}'
"""

from __future__ import annotations

import functools
import json
from typing import Any

from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment

# what check_body renders the template with: every payload key, hostile values
SAMPLE_PAYLOAD: dict[str, Any] = {
    "version": 1,
    "alert_id": 1,
    "id": 1,
    "key": "run_failed:sample",
    "kind": "run_failed",
    "dag_id": "sample_dag",
    "run_id": 'manual__"}{{ 7*7 }}',
    "task_id": "sample_task",
    "try_number": 1,
    "logical_date": "2026-01-01T00:00:00+00:00",
    "message": 'task x: RuntimeError: "quoted" <b>\\ {% raw %}\n',
    "created_at": "2026-01-01T00:00:00+00:00",
}


def _as_json(value: Any) -> str:
    return json.dumps(value, default=str)


@functools.lru_cache(maxsize=1)
def _environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=StrictUndefined, finalize=_as_json, autoescape=False)


@functools.lru_cache(maxsize=256)
def _compile(template: str) -> Any:
    return _environment().from_string(template)


def render_body(template: str, payload: dict[str, Any]) -> str:
    """The body for ``payload``; ValueError when it cannot be rendered or is not JSON."""
    try:
        text = _compile(template).render({**payload, "alert": payload})
    except TemplateError as exc:
        raise ValueError(f"body template: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - e.g. arithmetic on a null try_number
        raise ValueError(f"body template: {type(exc).__name__}: {exc}") from None
    try:
        json.loads(text)
    except ValueError as exc:
        raise ValueError(
            f"body template does not render JSON ({exc}); every {{{{ }}}} is already a JSON "
            'value: write {{ message }}, not "{{ message }}"'
        ) from None
    return text


def check_body(template: Any) -> None:
    """ValueError naming the template's line when ``template`` is not a usable body."""
    if not isinstance(template, str) or not template.strip():
        raise ValueError(f"body must be a non-empty template string, got {template!r}")
    try:
        _compile(template)
    except TemplateSyntaxError as exc:
        raise ValueError(f"body template, line {exc.lineno}: {exc.message}") from None
    render_body(template, SAMPLE_PAYLOAD)
