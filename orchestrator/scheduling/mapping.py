"""Runtime task mapping: the pure rules that turn a mapped task's sources into items.

A mapped task is declared with ``.expand(name=source, ...)`` (the cross product of its
arguments' lists, in argument order, the last argument varying fastest) or
``.expand_kwargs(source)`` (one item per dict of a list). Each source is an upstream
task's JSON result, a literal list or a DAG param; its stored form (in the DAG spec)
is a ``ref``: ``{"task": id}``, ``{"literal": [...]}`` or ``{"param": name}``.

:func:`map_items` takes the resolved values and answers the list of each item's
mapped arguments, or raises :class:`MapError` naming the task, the source, the length
and the limit. No database, no clock.

>>> spec = {"kind": "expand", "args": [["path", {"task": "ls"}], ["n", {"literal": [1, 2]}]]}
>>> map_items(spec, {"path": ["a", "b"], "n": [1, 2]}, limit=10, task_id="load")
[{'path': 'a', 'n': 1}, {'path': 'a', 'n': 2}, {'path': 'b', 'n': 1}, {'path': 'b', 'n': 2}]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import OrchestratorError

UNMAPPED = -1  # the map_index of a task instance that is not (yet) one item of a map
KWARGS = "*"  # the one argument name of an expand_kwargs mapping


class MapError(OrchestratorError):
    """The values a mapped task was to be expanded over cannot be mapped."""


@dataclass(frozen=True)
class BadItem:
    """An ``expand_kwargs`` item that is not an object with string keys: as in Airflow,
    its instance fails (with ``error``) and the other instances run."""

    error: str


def describe(ref: Mapping[str, Any]) -> str:
    """A source in words: ``list_files``, ``param 'n'``, ``a literal list``."""
    if "task" in ref:
        return str(ref["task"]) + "".join(f"[{k!r}]" for k in ref.get("key") or ())
    if "param" in ref:
        return f"param {ref['param']!r}"
    return "a literal list"


def refs(mapping: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(argument name, ref) pairs of a mapping spec, in declaration order."""
    return [(str(name), dict(ref)) for name, ref in mapping["args"]]


def group_of(mapping: Mapping[str, Any] | None) -> str | None:
    """The mapped task group a task's mapping belongs to (None: not in one, issue 25)."""
    return mapping.get("group") if mapping else None


def task_sources(mapping: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The upstream tasks whose results a mapping needs (empty: expandable at once)."""
    if not mapping:
        return ()
    return tuple(dict.fromkeys(ref["task"] for _, ref in refs(mapping) if "task" in ref))


def resolve(
    mapping: Mapping[str, Any],
    params: Mapping[str, Any],
    results: Mapping[str, Any],
) -> dict[str, Any]:
    """Each argument's value: a literal as declared, a param from the run's params,
    a task's result from ``results`` (already decoded; a mapped task's results
    collected into a list in map order by the caller)."""
    out: dict[str, Any] = {}
    for name, ref in refs(mapping):
        if "literal" in ref:
            out[name] = ref["literal"]
        elif "param" in ref:
            out[name] = params.get(ref["param"])
        else:
            out[name] = _key_of(results.get(ref["task"]), ref.get("key") or ())
    return out


def _key_of(value: Any, keys: Iterable[str]) -> Any:
    """One key (path) of a task's result (``expand(x=extract()["files"])``, issue 25);
    None when the result has no such key (then "not a list" names the source)."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def map_items(
    mapping: Mapping[str, Any],
    values: Mapping[str, Any],
    *,
    limit: int,
    task_id: str,
) -> list[dict[str, Any]]:
    """The mapped arguments of every map item, in map order (index 0 first).

    ``values`` holds each argument's resolved value (see :func:`resolve`). Every value
    must be a list; the number of items may be at most ``limit`` (the
    ``max_map_length`` setting). An empty list gives no items: the mapped task is
    skipped. For ``expand_kwargs`` each item should be an object with string keys; one
    that is not is a :class:`BadItem` in its place (its instance fails, the others run).
    """
    pairs = refs(mapping)
    if mapping["kind"] == "expand_kwargs":
        (name, ref) = pairs[0]
        items = _as_list(task_id, ref, values.get(name))
        _check_length(task_id, len(items), limit, describe(ref))
        out: list[Any] = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not all(isinstance(k, str) for k in item):
                out.append(
                    BadItem(
                        f"mapped task {task_id!r}: expand_kwargs over {describe(ref)} needs a "
                        f"list of objects with string keys; item {i} is {_kind(item)}"
                    )
                )
            else:
                out.append(dict(item))
        return out
    lists = [(name, ref, _as_list(task_id, ref, values.get(name))) for name, ref in pairs]
    total = math.prod(len(items) for _, _, items in lists)
    if len(lists) == 1:
        source = describe(lists[0][1])
    else:
        source = " x ".join(
            f"{name} from {describe(ref)} ({len(items)})" for name, ref, items in lists
        )
    _check_length(task_id, total, limit, source)
    names = [name for name, _, _ in lists]
    return [
        dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(items for _, _, items in lists))
    ]


def collect(results: Iterable[tuple[int, Any]]) -> list[Any]:
    """A mapped task's results as one list in map order, from (map_index, value) pairs."""
    return [value for _, value in sorted(results, key=lambda pair: pair[0])]


def _as_list(task_id: str, ref: Mapping[str, Any], value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    raise MapError(
        f"mapped task {task_id!r}: cannot expand over {describe(ref)}: it gave "
        f"{_kind(value)}, not a list"
    )


def _check_length(task_id: str, length: int, limit: int, source: str) -> None:
    if length > limit:
        raise MapError(
            f"mapped task {task_id!r}: {length} items from {source} is more than "
            f"max_map_length ({limit})"
        )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, dict):
        return f"an object with {len(value)} key(s)"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type(value).__name__
