"""Templates checked when the DAG file is parsed: every name a template uses must exist.

A template that names an unknown variable (``{{ dss }}``), macro
(``{{ macros.ds_ad(ds, 1) }}``), filter (``{{ ds | upper_case }}``), test, param
(``{{ params.limt }}``), ``dag_run`` field, ``var`` kind (``var.values``) or connection
field (``conn.db.hots``) is an import error naming the DAG file's line, the task, the
template and the name, instead of a failed run later. Names come from
:data:`~orchestrator.authoring.template_context.TEMPLATE_NAMES`, the DAG's
``user_defined_macros`` and ``user_defined_filters``, and a mapped shell task's
arguments. Variables and connections are looked up when the task runs (by their
names, which are data here): only their shape is checked.

>>> check_names("echo {{ macros.ds_add(ds, 1) }}", Names(params={"n"}))
>>> check_names("echo {{ dss }}", Names(params=set()))
Traceback (most recent call last):
...
orchestrator.authoring.templating.TemplateRenderError: unknown template variable 'dss' (did you mean 'ds'?)...
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jinja2 import TemplateError, meta, nodes
from jinja2.sandbox import SandboxedEnvironment

from orchestrator.authoring.credentials import Connection
from orchestrator.authoring.macros import MACRO_NAMES
from orchestrator.authoring.template_context import DAG_RUN_ATTRS, TEMPLATE_NAMES
from orchestrator.authoring.templating import TemplateRenderError

_BASE = SandboxedEnvironment()
_DICT_ATTRS = frozenset(a for a in dir(dict) if not a.startswith("_"))
_CONNECTION_ATTRS = frozenset(a for a in dir(Connection) if not a.startswith("_")) | frozenset(
    Connection.__dataclass_fields__
)
_CONNECTION_FIELDS = sorted(
    {*Connection.__dataclass_fields__}
    | {a for a in dir(Connection) if isinstance(getattr(Connection, a, None), property)}
)
_VAR_KINDS = frozenset({"value", "json"})


@dataclass(frozen=True)
class Names:
    """What a template may name: the declared params, the DAG's user-defined macros and
    filters, extra variables (a mapped shell task's arguments), and whether its mapped
    arguments are only known at run time (``expand_kwargs``: no variable check)."""

    params: set[str] | frozenset[str]
    macros: frozenset[str] = frozenset()
    filters: frozenset[str] = frozenset()
    extra: frozenset[str] = frozenset()
    open_variables: bool = False
    # user-defined names this template may not use (a built-in sensor's: the worker
    # renders it without importing the DAG file), for a clearer error
    unavailable: frozenset[str] = frozenset()
    used: set[str] = field(default_factory=set)  # user-defined names found (filled in)

    @property
    def variables(self) -> frozenset[str]:
        return TEMPLATE_NAMES | self.macros | self.extra


@functools.lru_cache(maxsize=64)
def _env(filters: frozenset[str]) -> SandboxedEnvironment:
    """An environment to parse with: the built-in filters and the user's (stand-ins)."""
    env = _BASE.overlay()
    env.filters = {**_BASE.filters, **{name: _stand_in for name in filters}}
    return env


def _stand_in(value: Any, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called
    return value


def _close(name: str, known: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _at(node: nodes.Node, source_name: str | None, source: str) -> str:
    if source_name:
        return f" at {source_name}:{node.lineno}"
    return f" (line {node.lineno} of the template)" if "\n" in source else ""


def _attr_name(node: nodes.Node) -> str | None:
    """``x.name`` or ``x['name']``: the name; None for anything computed."""
    if isinstance(node, nodes.Getattr):
        return node.attr
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
        value = node.arg.value
        return value if isinstance(value, str) else None
    return None


def check_names(source: str, names: Names, source_name: str | None = None) -> None:
    """Raise TemplateRenderError for the first unknown name ``source`` uses (syntax
    errors too); ``source_name`` (a template file) is named in its place."""
    env = _env(names.filters)
    try:
        tree = env.parse(source)
    except TemplateError as exc:
        raise TemplateRenderError(f"bad template: {exc}") from None
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        kind = "filter" if isinstance(node, nodes.Filter) else "test"
        known = env.filters if kind == "filter" else env.tests
        if node.name in names.filters:
            names.used.add(node.name)
        if node.name not in known:
            raise TemplateRenderError(
                f"unknown {kind} {node.name!r}{_at(node, source_name, source)}"
                + _unavailable(node.name, names)
                + _close(node.name, known)
            )
    try:
        undeclared = meta.find_undeclared_variables(tree) - set(env.globals)
    except TemplateError as exc:
        raise TemplateRenderError(f"bad template: {exc}") from None
    names.used.update(undeclared & names.macros)
    unknown = undeclared - names.variables
    if unknown and not names.open_variables:
        first = min(
            (n for n in tree.find_all(nodes.Name) if n.name in unknown),
            key=lambda n: n.lineno,
        )
        known = sorted(names.variables)
        raise TemplateRenderError(
            f"unknown template variable {first.name!r}{_at(first, source_name, source)}"
            + _unavailable(first.name, names)
            + _close(first.name, known)
            + f"; known: {', '.join(known)}"
        )
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        _check_attribute(node, undeclared, names, source_name, source)


def _unavailable(name: str, names: Names) -> str:
    if name not in names.unavailable:
        return ""
    return (
        ": user_defined_macros and user_defined_filters are not available in a built-in "
        "sensor's arguments (the worker renders them without importing the DAG file)"
    )


def _check_attribute(
    node: nodes.Node, undeclared: set[str], names: Names, source_name: str | None, source: str
) -> None:
    attr = _attr_name(node)
    owner = node.node  # type: ignore[attr-defined]
    if attr is None:
        return
    if isinstance(owner, nodes.Name) and owner.name in undeclared:
        base = owner.name
        if base == "macros" and attr not in MACRO_NAMES:
            what, known = "macro", MACRO_NAMES
        elif base == "params" and attr not in names.params and attr not in _DICT_ATTRS:
            what, known = "param", frozenset(names.params)
        elif base == "dag_run" and attr not in DAG_RUN_ATTRS:
            what, known = "dag_run field", DAG_RUN_ATTRS
        elif base == "var" and attr not in _VAR_KINDS:
            what, known = "var kind (var.value.NAME or var.json.NAME)", _VAR_KINDS
        else:
            return
        label = f"macros.{attr}" if base == "macros" else f"{base}.{attr}"
        raise TemplateRenderError(
            f"unknown {what} {label!r}{_at(node, source_name, source)}{_close(attr, known)}; "
            f"known: {', '.join(sorted(known)) or 'none'}"
        )
    inner = owner
    if (
        isinstance(inner, nodes.Getattr | nodes.Getitem)
        and isinstance(inner.node, nodes.Name)
        and inner.node.name == "conn"
        and "conn" in undeclared
        and _attr_name(inner) not in (None, "get")
        and attr not in _CONNECTION_ATTRS
    ):
        raise TemplateRenderError(
            f"unknown connection field {attr!r} of conn.{_attr_name(inner)}"
            f"{_at(node, source_name, source)}{_close(attr, _CONNECTION_FIELDS)}; known: "
            + ", ".join(_CONNECTION_FIELDS)
        )


# -- the DAG's template options -----------------------------------------------------------
def user_templates(
    macros: Mapping[str, Any] | None,
    filters: Mapping[str, Callable[..., Any]] | None,
) -> tuple[dict[str, Any], dict[str, Callable[..., Any]]]:
    """``user_defined_macros`` and ``user_defined_filters`` checked (ValueError naming
    the entry): names are identifiers, macros do not shadow a template variable,
    filters are callables."""
    out_macros = dict(macros or {})
    out_filters = dict(filters or {})
    for kind, entries in (
        ("user_defined_macros", out_macros),
        ("user_defined_filters", out_filters),
    ):
        if not isinstance(entries, dict):
            raise ValueError(f"{kind} must be a dict, got {type(entries).__name__}")
        for name in entries:
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"{kind}: {name!r} is not a name a template can use")
    for name in out_macros:
        if name in TEMPLATE_NAMES:
            raise ValueError(
                f"user_defined_macros: {name!r} is a template variable already; choose another name"
            )
    for name, fn in out_filters.items():
        if not callable(fn):
            raise ValueError(f"user_defined_filters: {name!r} must be a callable")
    return out_macros, out_filters
