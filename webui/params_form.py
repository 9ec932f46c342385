"""The trigger form built from a DAG's declared params, and reading it back.

Each param becomes one field typed after its default: a checkbox for a bool, a
number for an int or float, a text box for a string, a JSON text area for anything
else. Values come back converted to the default's type, or a ConfigError naming
the field.

>>> fields_for({"n": 3, "dry_run": False})[0].kind
'number'
>>> parse_params({"n": 3}, {"param.n": "7"})
{'n': 7}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import ConfigError

PREFIX = "param."


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # "checkbox" | "number" | "text" | "json"
    value: str
    checked: bool = False
    step: str = "1"

    @property
    def input_name(self) -> str:
        return PREFIX + self.name


def fields_for(params: Mapping[str, Any]) -> list[Field]:
    out = []
    for name, default in params.items():
        if isinstance(default, bool):
            out.append(Field(name, "checkbox", "true", checked=default))
        elif isinstance(default, int | float):
            step = "1" if isinstance(default, int) else "any"
            out.append(Field(name, "number", str(default), step=step))
        elif isinstance(default, str):
            out.append(Field(name, "text", default))
        else:
            out.append(Field(name, "json", json.dumps(default, indent=1)))
    return out


def parse_params(params: Mapping[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """The run conf from a submitted form: only declared params, typed like their defaults."""
    conf: dict[str, Any] = {}
    for name, default in params.items():
        raw = form.get(PREFIX + name)
        try:
            if isinstance(default, bool):
                conf[name] = raw is not None
            elif raw is None:
                continue
            elif isinstance(default, int):
                conf[name] = int(raw)
            elif isinstance(default, float):
                conf[name] = float(raw)
            elif isinstance(default, str):
                conf[name] = raw
            else:
                conf[name] = json.loads(raw)
        except RecursionError:
            raise ConfigError(f"param {name!r}: the JSON is nested too deeply") from None
        except ValueError:
            kind = "JSON" if not isinstance(default, int | float) else type(default).__name__
            raise ConfigError(f"param {name!r}: expected {kind}, got {raw[:60]!r}") from None
    return conf
