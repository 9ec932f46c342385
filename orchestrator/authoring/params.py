"""Typed DAG params: :class:`Param` (Airflow's name and shape), checked with JSON Schema.

A DAG's ``params`` maps each name to a plain value (its default, which also fixes its
JSON type) or to a :class:`Param`: a default and JSON Schema keywords (``type``,
``enum``, ``minimum``, ``maximum``, ``format``, ``pattern``, ``title``...). Validation
is the ``jsonschema`` library's (Draft 2020-12, formats checked), on every way a run
gets its conf: ``dags trigger``, the UI form, the API, ``trigger_dag`` and backfills.
A Param default that fails its own schema, a schema that is not valid JSON Schema, and
a required param (no default) on a scheduled DAG are import errors.

>>> print(problem("n", {"type": "integer", "maximum": 10}, 12))
param 'n': 12 is greater than the maximum of 10 (rule maximum: 10)
>>> print(problem("day", {"type": "string", "format": "date"}, "2026-02-30"))
param 'day': '2026-02-30' is not a 'date' (rule format: "date")
>>> problem("n", {"type": "integer"}, 3) is None
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

NOTSET: Any = type("NotSet", (), {"__repr__": lambda self: "NOTSET"})()
_MAX_MESSAGE = 200  # a value in an error message is cut (it may be a hostile conf)

# a plain value's JSON type: (Python type, JSON Schema type, in words)
_PLAIN_TYPES: tuple[tuple[type, str, str], ...] = (
    (bool, "boolean", "a boolean"),
    (int, "integer", "an integer"),
    (float, "number", "a number"),
    (str, "string", "a string"),
    (list, "array", "a list"),
    (dict, "object", "an object"),
)


class Param:
    """A DAG param with a default and a JSON Schema (Airflow's ``Param``).

    ``Param(default, description=None, **schema)``: every other keyword is a JSON
    Schema keyword. Without a default the param is required: each trigger must give
    it (only a DAG with ``schedule=None`` may have one)::

        params={
            "day": Param("2026-01-01", type="string", format="date", title="Day"),
            "limit": Param(100, type="integer", minimum=1, maximum=1000),
            "mode": Param("delta", enum=["delta", "full"], description="how much to load"),
            "email": Param(type="string", format="email"),  # required
        }

    The UI's trigger form draws a widget per schema: a select for ``enum``, a number
    with ``minimum``/``maximum``, a date picker for ``format="date"``, a checkbox for
    ``type="boolean"``, a JSON editor for objects and arrays, with the description.
    """

    def __init__(self, default: Any = NOTSET, description: str | None = None, **schema: Any):
        self.value = default  # Airflow's attribute names: value, description, schema
        self.description = description
        self.schema = dict(schema)

    @property
    def has_value(self) -> bool:
        return self.value is not NOTSET

    def stored_schema(self) -> dict[str, Any]:
        """The schema as stored with the DAG (the description is a JSON Schema annotation)."""
        if self.description is None:
            return dict(self.schema)
        return {**self.schema, "description": self.description}

    def __repr__(self) -> str:
        return f"Param({self.value!r}, {self.schema!r})"


def plain_schema(default: Any) -> dict[str, Any]:
    """The schema of a plain param: the JSON type of its default (None: anything)."""
    for kind, name, _ in _PLAIN_TYPES:
        if isinstance(default, kind):
            return {"type": name}
    return {}


def plain_type_words(value: Any) -> str | None:
    for kind, _, words in _PLAIN_TYPES:
        if isinstance(value, kind):
            return words
    return None


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a valid JSON Schema, or None."""
    if not isinstance(schema, Mapping):
        return f"a schema is a JSON object, got {type(schema).__name__}"
    try:
        json.dumps(schema, allow_nan=False)
        Draft202012Validator.check_schema(schema)
    except (TypeError, ValueError) as exc:
        return f"the schema is not JSON: {exc}"
    except SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path)
        return f"not a valid JSON Schema: {exc.message}" + (f" (at {at})" if at else "")
    return None


def problem(name: str, schema: Mapping[str, Any], value: Any) -> str | None:
    """What is wrong with ``value`` for param ``name`` under ``schema``, naming the rule
    (``maximum``, ``enum``, ``format``...), or None when it is valid."""
    wrong = _violation(schema, value)
    return None if wrong is None else f"param {name!r}{wrong[0]}: {wrong[1]}"


def _violation(schema: Mapping[str, Any], value: Any) -> tuple[str, str] | None:
    """(where inside the value, what is wrong and the rule) or None."""
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    inside = "".join(f"[{p!r}]" for p in error.absolute_path)
    message = error.message
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 3] + "..."
    return inside, f"{message} (rule {error.validator}: {_short(error.validator_value)})"


def declare(
    params: Mapping[str, Any] | None, scheduled: bool
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """(defaults, schemas of the Params, required names) of a DAG's ``params``.

    Raises ValueError naming the param: a name that is not a string, a default that is
    not JSON, a schema that is not JSON Schema, a default that fails its own schema, a
    required param on a DAG that runs on a schedule (``scheduled``).
    """
    if params is None:
        return {}, {}, []
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a dict, got {type(params).__name__}")
    defaults: dict[str, Any] = {}
    schemas: dict[str, dict[str, Any]] = {}
    required: list[str] = []
    for name, item in params.items():
        if not isinstance(name, str):
            raise ValueError(f"params: a param's name is a string, got {name!r}")
        value = item.value if isinstance(item, Param) else item
        if value is not NOTSET:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"params must be JSON-serialisable: param {name!r}: {exc}"
                ) from None
        if not isinstance(item, Param):
            defaults[name] = value
            continue
        schema = item.stored_schema()
        bad = schema_problem(schema)
        if bad:
            raise ValueError(f"param {name!r}: {bad}")
        schemas[name] = schema
        if value is NOTSET:
            required.append(name)
            defaults[name] = None
            continue
        wrong = _violation(schema, value)
        if wrong:
            raise ValueError(
                f"param {name!r}: its default {_short(value)} fails its own schema: "
                f"{wrong[1]}" + (f" (at {wrong[0]})" if wrong[0] else "")
            )
        defaults[name] = value
    if scheduled and required:
        raise ValueError(
            f"param {required[0]!r} has no default, so every run must give it, but the DAG "
            "runs on a schedule (whose runs have no conf): give it a default or use "
            "schedule=None"
        )
    return defaults, schemas, required


def resolve(
    defaults: Mapping[str, Any],
    schemas: Mapping[str, Mapping[str, Any]],
    required: tuple[str, ...] | list[str],
    conf: Mapping[str, Any],
    *,
    strict: bool = False,
) -> dict[str, Any]:
    """The params of a run: ``conf`` over the defaults, every value valid for its schema
    (a plain param's: the JSON type of its default). Raises ValueError naming the param
    and the rule. A key of ``conf`` that is not a param is kept as it is (Airflow's
    rule, issue 26), or refused when ``strict`` (the DAG's ``strict_conf=True``): the
    one place that rule is decided, for every way a run gets its conf.

    >>> resolve({"n": 1}, {}, (), {"extra": "x"})
    {'n': 1, 'extra': 'x'}
    >>> resolve({"n": 1}, {}, (), {"extra": "x"}, strict=True)
    Traceback (most recent call last):
    ...
    ValueError: unknown param 'extra' (declared params: n); the DAG takes only its params (strict_conf=True)
    """
    unknown = [key for key in conf if key not in defaults]
    if strict and unknown:
        declared = ", ".join(sorted(defaults)) or "none"
        raise ValueError(
            f"unknown param {str(unknown[0])[:60]!r} (declared params: {declared}); "
            "the DAG takes only its params (strict_conf=True)"
        )
    for name in required:
        if name not in conf:
            raise ValueError(
                f"param {name!r} is required (it has no default): give it in the conf "
                "(rule required)"
            )
    for name, value in conf.items():
        if name not in defaults:
            continue
        if name in schemas:
            wrong = problem(name, schemas[name], value)
            if wrong:
                raise ValueError(wrong)
            continue
        default = defaults[name]
        if problem(name, plain_schema(default), value) is not None:
            got = plain_type_words(value)
            raise ValueError(
                f"param {name!r} must be {plain_type_words(default)} (like its default "
                f"{_short(default)}), got {got or 'null'} {_short(value)}"
            )
    return {**defaults, **conf}
