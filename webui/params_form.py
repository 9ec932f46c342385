"""The trigger form built from a DAG's params and their JSON Schemas, and reading it back.

Each param becomes one widget chosen by its schema (a typed ``Param``'s, or a plain
param's default type): a select for ``enum``, a checkbox for a boolean, a number with
``minimum``/``maximum`` for an integer or number, a date picker for
``format="date"`` (a date and time picker for ``"date-time"``, read as UTC), a JSON
editor for an object or array, a text box otherwise; labelled with its ``title`` (or
name), with its description below. Values come back converted to the param's type;
the store then checks them against the schema (``validate_conf``), so an out-of-range
number or a bad date is a flashed error naming the param and the rule.

>>> [f.kind for f in fields_for({"n": 3, "dry_run": False})]
['number', 'checkbox']
>>> parse_params({"n": 3}, {"param.n": "7"})
{'n': 7}
>>> parse_params({"m": "a"}, {"param.m": "2"}, {"m": {"enum": ["a", 2]}})
{'m': 2}

Below the params, a JSON editor takes the conf's other keys (issue 26: Airflow's
"configuration JSON"), kept in the run's conf unless the DAG has ``strict_conf=True``
(then the form has no such field, and the store refuses a posted one):

>>> parse_extra_conf({"n": 3}, {EXTRA_FIELD: '{"region": "eu"}'})
{'region': 'eu'}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from orchestrator.authoring.params import plain_schema
from orchestrator.errors import ConfigError

PREFIX = "param."


@dataclass(frozen=True)
class Option:
    value: str  # the JSON of the enum value: what the form posts back
    label: str
    selected: bool


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # checkbox | number | text | json | select | date | datetime-local
    value: str
    checked: bool = False
    step: str = "1"
    title: str = ""
    description: str = ""
    required: bool = False
    minimum: str | None = None
    maximum: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    options: tuple[Option, ...] = field(default=())

    @property
    def input_name(self) -> str:
        return PREFIX + self.name

    @property
    def input_id(self) -> str:
        return "param-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in self.name)

    @property
    def label(self) -> str:
        return self.title or self.name


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def _kind(schema: Mapping[str, Any], default: Any) -> str:
    types = _types(schema) - {"null"}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "select"
    if types == {"boolean"}:
        return "checkbox"
    if types and types <= {"integer", "number"}:
        return "number"
    fmt = schema.get("format")
    if fmt == "date" and types <= {"string"}:
        return "date"
    if fmt == "date-time" and types <= {"string"}:
        return "datetime-local"
    if types & {"object", "array"} or (not types and not isinstance(default, str)):
        return "json"
    return "text"


def _number(value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _text(kind: str, default: Any) -> str:
    if default is None:
        return "" if kind != "json" else "null"
    if kind == "json":
        return json.dumps(default, indent=1)
    if kind == "datetime-local" and isinstance(default, str):
        try:  # the picker shows UTC wall time without an offset
            when = datetime.fromisoformat(default)
        except ValueError:
            return ""
        if when.tzinfo is not None:
            when = when.astimezone(UTC)
        return when.strftime("%Y-%m-%dT%H:%M")
    return str(default)


def _options(schema: Mapping[str, Any], default: Any) -> tuple[Option, ...]:
    shown = schema.get("values_display")  # Airflow's labels for enum values
    shown = shown if isinstance(shown, Mapping) else {}
    out = []
    for value in schema["enum"]:
        label = shown.get(str(value), value if isinstance(value, str) else json.dumps(value))
        out.append(
            Option(json.dumps(value), str(label), value == default and type(value) is type(default))
        )
    return tuple(out)


def fields_for(
    params: Mapping[str, Any],
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    required: tuple[str, ...] | list[str] = (),
) -> list[Field]:
    """One field per param, in the DAG's order (``schemas``: the typed Params')."""
    schemas = schemas or {}
    out = []
    for name, default in params.items():
        schema = schemas.get(name) or plain_schema(default)
        kind = _kind(schema, default)
        common: dict[str, Any] = {
            "title": str(schema.get("title") or ""),
            "description": str(schema.get("description") or ""),
            "required": name in required,
        }
        if kind == "checkbox":
            out.append(Field(name, kind, "true", checked=default is True, **common))
        elif kind == "number":
            integer = "number" not in _types(schema)
            out.append(
                Field(
                    name,
                    kind,
                    "" if _number(default) is None else str(default),
                    step="1" if integer else "any",
                    minimum=_number(schema.get("minimum")),
                    maximum=_number(schema.get("maximum")),
                    **common,
                )
            )
        elif kind == "select":
            out.append(Field(name, kind, "", options=_options(schema, default), **common))
        else:
            lengths = {}
            if kind == "text":
                for key, attr in (("minLength", "min_length"), ("maxLength", "max_length")):
                    if isinstance(schema.get(key), int) and not isinstance(schema[key], bool):
                        lengths[attr] = schema[key]
            out.append(Field(name, kind, _text(kind, default), **lengths, **common))
    return out


def parse_params(
    params: Mapping[str, Any],
    form: Mapping[str, str],
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run conf from a submitted form: only declared params, typed by their schemas
    (ConfigError naming the field for a value that is not of its type; the schema's
    other rules are the store's to check)."""
    schemas = schemas or {}
    conf: dict[str, Any] = {}
    for name, default in params.items():
        schema = schemas.get(name) or plain_schema(default)
        kind = _kind(schema, default)
        nullable = "null" in _types(schema) or (not _types(schema) and default is None)
        raw = form.get(PREFIX + name)
        try:
            if kind == "checkbox":
                conf[name] = raw is not None
            elif raw is None:
                continue
            elif raw.strip() == "" and kind != "text" and nullable:
                conf[name] = None
            elif kind == "select":
                value = json.loads(raw)
                if not any(value == v and type(value) is type(v) for v in schema["enum"]):
                    raise ConfigError(f"param {name!r}: {raw[:60]} is not one of its choices")
                conf[name] = value
            elif kind == "number":
                text = raw.strip()
                conf[name] = int(text) if "number" not in _types(schema) else _int_or_float(text)
            elif kind == "datetime-local":
                conf[name] = _utc(raw) if raw.strip() else raw
            elif kind == "json":
                conf[name] = json.loads(raw)
            else:
                conf[name] = raw
        except RecursionError:
            raise ConfigError(f"param {name!r}: the JSON is nested too deeply") from None
        except ValueError:
            wanted = {"number": "float", "json": "JSON", "select": "one of its choices"}
            expected = wanted.get(kind, "a date and time")
            if kind == "number" and "number" not in _types(schema):
                expected = "int"
            raise ConfigError(f"param {name!r}: expected {expected}, got {raw[:60]!r}") from None
    return conf


EXTRA_FIELD = "conf_extra"  # the form field of the conf's keys that are not params


def parse_extra_conf(params: Mapping[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """The keys of the conf that are not params, from the form's JSON object field
    (empty: none). ConfigError for text that is not a JSON object, or that names a
    param (each param has its own field)."""
    raw = (form.get(EXTRA_FIELD) or "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ConfigError("more conf: the JSON is nested too deeply") from None
    except ValueError as exc:
        raise ConfigError(f"more conf: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(
            f'more conf: expected a JSON object like {{"key": 1}}, got {type(value).__name__}'
        )
    named = sorted(set(value) & set(params))
    if named:
        raise ConfigError(f"more conf: {named[0][:60]!r} is a param: give it in its own field")
    return value


def _int_or_float(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _utc(text: str) -> str:
    """A date and time picker's value (UTC wall time) as RFC 3339 with its offset."""
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        return when.strftime("%Y-%m-%dT%H:%M:%S") + "+00:00"
    return when.isoformat()
