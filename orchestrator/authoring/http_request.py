"""HTTP tasks: what ``dag.http(...)`` declares, checked at parse time, and its safe rendering.

The URL, the header values and the body are Jinja2 templates rendered with the same
variables as shell commands (``ds``, ``params``, ``logical_date``...). A rendered value
is data, never syntax:

- in the URL every ``{{ expression }}`` is percent-encoded (``/``, ``?``, ``&``, ``=``,
  ``#`` included), so a value can change a path segment's or a query parameter's value
  but never the scheme, the host or the path's structure; the scheme and host must be
  literal text;
- in a ``json=`` body each string is rendered on its own and the whole body is then
  JSON-encoded, so a value can never close a string; a string that is one expression
  alone (``"{{ params.n }}"``) keeps the value's JSON type;
- in a ``data=`` dict each value is rendered and form-encoded;
- a header value that renders with a line break is refused (no header injection).

>>> spec = http_spec("http://127.0.0.1:8080/hook", method="POST",
...                  json={"day": "{{ ds }}"}, where="d.py:3")
>>> req = render_request(spec, {"ds": "2026-01-01", "params": {}})
>>> req.url, req.json
('http://127.0.0.1:8080/hook', {'day': '2026-01-01'})
>>> render_request(http_spec("http://h/a/{{ params.x }}?q={{ params.x }}", where="d.py:3"),
...                {"params": {"x": "../b&c=1"}}).url
'http://h/a/..%2Fb%26c%3D1?q=..%2Fb%26c%3D1'
"""

from __future__ import annotations

import json as jsonlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from jinja2 import StrictUndefined, TemplateError
from jinja2.nativetypes import native_concat
from jinja2.sandbox import SandboxedEnvironment

from orchestrator.authoring.templating import TemplateRenderError, with_filters

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_EXPR = re.compile(r"\{\{|\{%")
_SECRET_NAME = re.compile(r"token|key|secret|pass|auth|sig|credential", re.I)
_ONE_EXPR = re.compile(r"^\{\{(?P<expr>(?:(?!\}\}).)*)\}\}$", re.S)


def _url_quote(value: Any) -> str:
    return quote(str(value), safe="")


_URL_ENV = SandboxedEnvironment(undefined=StrictUndefined, finalize=_url_quote, autoescape=False)
_TEXT_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


class HttpSpecError(ValueError):
    """A ``dag.http`` argument that cannot work; the message names the argument."""


def _status_ranges(expect: Any) -> list[list[int]]:
    if isinstance(expect, int) and not isinstance(expect, bool):
        expect = [expect]
    if isinstance(expect, range):
        if expect.step != 1 or len(expect) == 0:
            raise HttpSpecError(f"expect_status: a range with step 1 is needed, got {expect!r}")
        codes = list(expect)
    elif isinstance(expect, Iterable) and not isinstance(expect, str | bytes):
        codes = []
        for item in expect:
            codes += list(item) if isinstance(item, range) else [item]
    else:
        raise HttpSpecError(f"expect_status: expected an int, a range or a list, got {expect!r}")
    if not codes or not all(
        isinstance(c, int) and not isinstance(c, bool) and 100 <= c <= 599 for c in codes
    ):
        raise HttpSpecError(f"expect_status: status codes are 100..599, got {expect!r}")
    ranges: list[list[int]] = []
    for code in sorted(set(codes)):
        if ranges and ranges[-1][1] == code:
            ranges[-1][1] = code + 1
        else:
            ranges.append([code, code + 1])
    return ranges


def _check(source: str, what: str) -> None:
    try:
        _TEXT_ENV.parse(source)
    except TemplateError as exc:
        raise HttpSpecError(f"{what}: bad template: {exc}") from None


def _check_body(value: Any, what: str) -> None:
    if isinstance(value, str):
        _check(value, what)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise HttpSpecError(f"{what}: keys must be strings, got {k!r}")
            _check_body(v, f"{what}[{k!r}]")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_body(v, f"{what}[{i}]")
    elif value is not None and not isinstance(value, bool | int | float):
        raise HttpSpecError(f"{what}: {type(value).__name__} is not JSON")


def http_spec(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    data: Mapping[str, Any] | str | None = None,
    expect_status: Any = range(200, 300),
    timeout: timedelta | float = timedelta(seconds=30),
    response_check: Any = None,
    where: str = "",
) -> dict[str, Any]:
    """The stored (JSON) form of an HTTP task's request; raises HttpSpecError."""
    if not isinstance(url, str) or not url.strip():
        raise HttpSpecError("url must be a non-empty string")
    literal = _EXPR.split(url, maxsplit=1)[0]
    parts = urlsplit(literal)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise HttpSpecError(f"url {url!r}: must start with a literal http:// or https:// address")
    head = literal[len(parts.scheme) + 3 + len(parts.netloc) :]
    if literal != url and head[:1] not in ("/", "?"):
        raise HttpSpecError(
            f"url {url!r}: the host must be literal text (a template may fill path "
            "segments and query values, after the first '/' or '?')"
        )
    _check(url, "url")
    method = str(method).upper()
    if method not in METHODS:
        raise HttpSpecError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if json is not None and data is not None:
        raise HttpSpecError("give json= or data=, not both")
    out_headers = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
            raise HttpSpecError(f"headers: {name!r} is not a header name")
        if not isinstance(value, str):
            raise HttpSpecError(f"headers[{name!r}]: the value must be a string")
        _check(value, f"headers[{name!r}]")
        out_headers[name] = value
    _check_body(json, "json")
    if data is not None and not isinstance(data, str | Mapping):
        raise HttpSpecError("data: a dict of form fields or a string")
    _check_body(data, "data")
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0:
        raise HttpSpecError(f"timeout must be a positive timedelta or seconds, got {timeout!r}")
    if response_check is not None and not callable(response_check):
        raise HttpSpecError("response_check must be a callable")
    return {
        "url": url,
        "method": method,
        "headers": out_headers,
        "json": jsonlib.loads(jsonlib.dumps(json)) if json is not None else None,
        "data": dict(data) if isinstance(data, Mapping) else data,
        "expect_status": _status_ranges(expect_status),
        "timeout": float(seconds),
        "response_check": response_check is not None,
    }


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    headers: dict[str, str]
    json: Any = None
    data: dict[str, str] | None = None
    content: str | None = None


Filters = Mapping[str, Any] | None  # the DAG's user_defined_filters (issue 25)


def _render(
    env: SandboxedEnvironment, source: str, variables: dict[str, Any], filters: Filters = None
) -> str:
    try:
        return with_filters(env, filters).from_string(source).render(**variables)
    except TemplateError as exc:
        raise TemplateRenderError(f"cannot render {source!r}: {exc}") from exc


def render_url_part(source: str, variables: dict[str, Any], filters: Filters = None) -> str:
    """A part of a URL (a path, an endpoint) rendered with every value percent-encoded,
    so a value never changes its structure (issue 26: HttpOperator's ``endpoint``)."""
    return _render(_URL_ENV, source, variables, filters)


def render_json(
    value: Any, variables: dict[str, Any], filters: Filters = None, native: bool = False
) -> Any:
    """Each string of a JSON-like ``value`` rendered; a string that is one expression
    alone (``"{{ params.n }}"``) keeps the value's JSON type. With ``native`` (the DAG's
    ``render_template_as_native_obj``, issue 25) any other rendered string that reads
    as a Python literal becomes its value (``"[{{ a }}, {{ b }}]"`` -> ``[1, 2]``), as
    Jinja's NativeEnvironment does; a value JSON cannot hold stays text."""
    if isinstance(value, str):
        one = _ONE_EXPR.match(value.strip())
        if one:  # one expression alone keeps the value's own JSON type
            env = with_filters(_TEXT_ENV, filters)
            try:
                native = env.compile_expression(one.group("expr"), undefined_to_none=False)(
                    **variables
                )
                if isinstance(native, StrictUndefined):
                    str(native)  # raises the undefined variable's error
            except TemplateError as exc:
                raise TemplateRenderError(f"cannot render {value!r}: {exc}") from exc
            try:
                return jsonlib.loads(jsonlib.dumps(native))
            except (TypeError, ValueError):
                return str(native)
        text = _render(_TEXT_ENV, value, variables, filters)
        return _literal(text) if native else text
    if isinstance(value, dict):
        return {k: render_json(v, variables, filters, native) for k, v in value.items()}
    if isinstance(value, list):
        return [render_json(v, variables, filters, native) for v in value]
    return value


def _literal(text: str) -> Any:
    """``text`` as the value of the Python literal it spells (jinja2's native_concat),
    when JSON can hold it; else ``text``."""
    value = native_concat([text])
    if isinstance(value, str):
        return value
    try:
        return jsonlib.loads(jsonlib.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return text


def render_request(
    spec: dict[str, Any], variables: dict[str, Any], filters: Filters = None
) -> Request:
    """Render an HTTP task's request; raises TemplateRenderError naming what failed.
    ``filters``: the DAG's ``user_defined_filters``."""
    url = _render(_URL_ENV, spec["url"], variables, filters)
    declared, rendered = urlsplit(spec["url"]), urlsplit(url)
    if (rendered.scheme, rendered.netloc) != (declared.scheme, declared.netloc):
        raise TemplateRenderError(f"url {spec['url']!r}: the rendered host changed")  # defensive
    headers = {}
    for name, source in spec["headers"].items():
        value = _render(_TEXT_ENV, source, variables, filters)
        if any(c in value for c in "\r\n\0"):
            raise TemplateRenderError(f"header {name!r}: the rendered value holds a line break")
        headers[name] = value
    data = spec.get("data")
    native = bool(spec.get("native"))
    if isinstance(data, dict):
        form = {k: str(render_json(v, variables, filters)) for k, v in data.items()}
        return Request(spec["method"], url, headers, data=form)
    if isinstance(data, str):
        text = _render(_TEXT_ENV, data, variables, filters)
        return Request(spec["method"], url, headers, content=text)
    body = (
        render_json(spec["json"], variables, filters, native)
        if spec.get("json") is not None
        else None
    )
    return Request(spec["method"], url, headers, json=body)


def status_expected(spec: dict[str, Any], status: int) -> bool:
    return any(lo <= status < hi for lo, hi in spec["expect_status"])


def describe_statuses(spec: dict[str, Any]) -> str:
    return ", ".join(
        str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}" for lo, hi in spec["expect_status"]
    )


def loggable_url(url: str) -> str:
    """``url`` with the values of secret-looking query parameters replaced by ``***``."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = [
        (k, "***" if _SECRET_NAME.search(k) else v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(query=urlencode(pairs, safe="*")))
