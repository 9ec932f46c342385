"""Reading request input strictly: query integers, form choices and JSON action bodies.

Anything that is not of the documented shape and type raises ConfigError (400, with
the reason) before a view changes anything; nothing is guessed or defaulted from a
malformed value.

>>> int_arg("offset", 0)                                      # doctest: +SKIP
0
>>> json_body({"paused": bool}, required=("paused",))         # doctest: +SKIP
{'paused': False}
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from flask import request
from werkzeug.routing import IntegerConverter

from orchestrator.authoring.spec import json_value_problem
from orchestrator.errors import ConfigError

MAX_INT = 2**63 - 1  # a BIGINT: what the database can compare against


class PathInt(IntegerConverter):
    """The app's ``<int:...>`` converter: at most 19 digits and at most ``MAX_INT``, so a
    path integer the database cannot hold does not match the route (404), never 500."""

    regex = r"\d{1,19}"

    def __init__(self, url_map: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max", MAX_INT)
        super().__init__(url_map, *args, **kwargs)


_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")
_TYPE_WORDS = {bool: "true or false", str: "a string", dict: "a JSON object", int: "a whole number"}


def int_arg(name: str, default: int | None, *, lo: int = 0, hi: int = MAX_INT) -> int | None:
    """The query parameter ``name`` as an integer from ``lo`` to ``hi``; ``default`` if absent."""
    raw = request.args.get(name, "").strip()
    if not raw:
        return default
    if not _INTEGER.fullmatch(raw):
        raise ConfigError(f"query parameter {name!r}: expected an integer, got {raw[:40]!r}")
    value = int(raw)
    if not lo <= value <= hi:
        raise ConfigError(f"query parameter {name!r}: must be from {lo} to {hi}, got {raw[:40]}")
    return value


def form_choice(name: str, choices: Collection[str], default: str | None = None) -> str:
    """The form field ``name``, which must be one of ``choices`` (or absent, if defaulted)."""
    raw = request.form.get(name)
    if raw is None and default is not None:
        return default
    if raw not in choices:
        shown = " or ".join(sorted(choices))
        got = "nothing" if raw is None else repr(raw[:40])
        raise ConfigError(f"form field {name!r}: expected {shown}, got {got}")
    return raw


def _has_body() -> bool:
    return (
        bool(request.content_length)
        or "chunked" in request.headers.get("Transfer-Encoding", "").lower()
    )


def json_body(fields: Mapping[str, type], required: Collection[str] = ()) -> dict[str, Any]:
    """The request's JSON object, holding only ``fields`` of their types.

    No body at all reads as ``{}``; a body must be ``Content-Type: application/json``,
    valid JSON, an object, name only known fields, give each its type and include
    every ``required`` one.
    """
    if not _has_body():
        body: Any = {}
    elif not request.is_json:
        raise ConfigError(
            f"the request body must be JSON (Content-Type: application/json), "
            f"got {request.mimetype or 'no Content-Type'}"
        )
    else:
        body = _parse(request.get_data(cache=True))
    if not isinstance(body, dict):
        raise ConfigError(f"the request body must be a JSON object, got {_json_kind(body)}")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        known = ", ".join(fields) or "none"
        raise ConfigError(f"unknown field(s) {', '.join(map(repr, unknown))} (known: {known})")
    missing = [name for name in required if name not in body]
    if missing:
        raise ConfigError(f"missing field(s) {', '.join(map(repr, missing))}")
    for name, value in body.items():
        want = fields[name]
        if type(value) is not want:  # exact: True is no number, 1 is no boolean
            raise ConfigError(f"{name}: expected {_TYPE_WORDS[want]}, got {_json_kind(value)}")
        if want is int and not -MAX_INT - 1 <= value <= MAX_INT:
            raise ConfigError(f"{name}: must be from {-MAX_INT - 1} to {MAX_INT}")
        problem = json_value_problem(value)  # the conf rule, for every field of every body
        if problem:
            verb = "is" if problem.startswith("nested") else "holds"
            raise ConfigError(f"{name}: {verb} {problem}")
    return body


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except RecursionError:
        raise ConfigError("the request body is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise ConfigError(f"the request body is not valid JSON: {exc}") from None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def choice_arg(name: str, choices: Collection[str], default: str) -> str:
    """The query parameter ``name``, one of ``choices``; ``default`` if absent or empty."""
    raw = request.args.get(name, "")
    if raw == "":
        return default
    if raw not in choices:
        shown = " or ".join(sorted(choices))
        raise ConfigError(f"query parameter {name!r}: expected {shown}, got {raw[:40]!r}")
    return raw


def text_arg(name: str, max_length: int) -> str | None:
    """The query parameter ``name`` as text of 1 to ``max_length`` characters (no NUL,
    no control characters); None if absent."""
    raw = request.args.get(name)
    if raw is None:
        return None
    if raw == "":
        raise ConfigError(f"query parameter {name!r}: must not be empty")
    if len(raw) > max_length:
        raise ConfigError(
            f"query parameter {name!r}: at most {max_length} characters, got {len(raw)}"
        )
    if any(ord(c) < 32 and c != "\t" for c in raw):
        raise ConfigError(f"query parameter {name!r}: holds a control character")
    if not raw.isprintable() and any(0xD800 <= ord(c) <= 0xDFFF for c in raw):
        raise ConfigError(f"query parameter {name!r}: holds a lone surrogate")
    return raw
