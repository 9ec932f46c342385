"""The mutation operators `python -m tools.mutate` applies: a chosen part of cosmic-ray's
core set, and three of our own for the mistakes a fenced SQL write invites.

cosmic-ray's core set has 213 operators, most of them arithmetic swaps (``+`` into
``<<``, ``%`` into ``**``...) that no one would write by mistake and that only make a
run long. Kept: the flipped comparison and its boundary (``<`` into ``<=`` and into
``>=``), ``==``/``!=`` and ``is``/``is not``, a dropped or added ``not``, ``and``/``or``,
``True``/``False``, a number one off, ``+``/``-`` and ``*``/``/``, break/continue, a loop
that never runs, and an ``except`` that catches something else.

Ours (provider ``orc``), for what the core set cannot express:

- ``DropCondition``: one argument of ``where(...)``, ``and_(...)``, ``or_(...)`` or
  ``filter(...)`` removed, and one condition of a list of comparisons (``conds = [a ==
  1, b == 2]``) dropped: the missing fencing clause;
- ``ReplaceInWithNotIn`` / ``ReplaceNotInWithIn``: ``in`` and ``not in`` swapped;
- ``SwapSqlMembership``: SQLAlchemy's ``in_``/``not_in`` and ``is_``/``is_not`` swapped.
"""

from __future__ import annotations

from collections.abc import Iterator

import parso
from cosmic_ray.operators import (
    binary_operator_replacement as binary,
)
from cosmic_ray.operators import (
    boolean_replacer,
    break_continue,
    exception_replacer,
    number_replacer,
    zero_iteration_for_loop,
)
from cosmic_ray.operators import (
    comparison_operator_replacement as comparison,
)
from cosmic_ray.operators import (
    unary_operator_replacement as unary,
)
from cosmic_ray.operators.operator import Example, Operator

_CORE_KEPT = (
    [
        getattr(comparison, f"ReplaceComparisonOperator_{a}_{b}")
        for a, b in (
            ("Eq", "NotEq"),
            ("NotEq", "Eq"),
            ("Lt", "LtE"),
            ("LtE", "Lt"),
            ("Gt", "GtE"),
            ("GtE", "Gt"),
            ("Lt", "GtE"),
            ("LtE", "Gt"),
            ("Gt", "LtE"),
            ("GtE", "Lt"),
            ("Is", "IsNot"),
            ("IsNot", "Is"),
        )
    ]
    + [
        getattr(binary, f"ReplaceBinaryOperator_{a}_{b}")
        for a, b in (("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"))
    ]
    + [
        unary.ReplaceUnaryOperator_Delete_Not,
        unary.ReplaceUnaryOperator_USub_UAdd,
        boolean_replacer.AddNot,
        boolean_replacer.ReplaceTrueWithFalse,
        boolean_replacer.ReplaceFalseWithTrue,
        boolean_replacer.ReplaceAndWithOr,
        boolean_replacer.ReplaceOrWithAnd,
        break_continue.ReplaceBreakWithContinue,
        break_continue.ReplaceContinueWithBreak,
        exception_replacer.ExceptionReplacer,
        number_replacer.NumberReplacer,
        zero_iteration_for_loop.ZeroIterationForLoop,
    ]
)

_CONDITION_CALLS = frozenset({"where", "and_", "or_", "filter"})


def _call_arguments(node) -> list | None:
    """The positional arguments of ``x.where(a, b)`` / ``and_(a, b)`` when ``node`` is
    the call's ``trailer`` ``(a, b)``, else None."""
    if node.type != "trailer" or node.children[0].type != "operator":
        return None
    if node.children[0].value != "(" or len(node.children) != 3:
        return None
    previous = node.get_previous_sibling()
    if previous is None:
        return None
    name = previous.children[-1] if previous.type == "trailer" else previous
    if getattr(name, "value", None) not in _CONDITION_CALLS:
        return None
    inner = node.children[1]
    items = inner.children[::2] if inner.type == "arglist" else [inner]
    # keyword and starred arguments are not conditions
    return [a for a in items if a.type != "argument" and a.get_code().strip() != "*"]


def _comparison_list(node) -> list | None:
    """The elements of a list literal of two or more comparisons, else None."""
    if node.type != "atom" or node.children[0].type != "operator":
        return None
    if node.children[0].value != "[" or len(node.children) != 3:
        return None
    inner = node.children[1]
    if inner.type != "testlist_comp":
        return None
    items = inner.children[::2]
    if len(items) < 2 or not all(i.type == "comparison" for i in items):
        return None
    return items


class DropCondition(Operator):
    """Remove one condition: an argument of ``where``/``and_``/``or_``/``filter``, or an
    element of a list of comparisons."""

    def mutation_positions(self, node) -> Iterator[tuple]:
        for item in _call_arguments(node) or _comparison_list(node) or ():
            yield (item.start_pos, item.end_pos)

    def mutate(self, node, index):
        items = _call_arguments(node) or _comparison_list(node)
        assert items is not None
        kept = [i.get_code(include_prefix=False) for k, i in enumerate(items) if k != index]
        open_, close = node.children[0].value, node.children[-1].value
        if node.type == "trailer":  # parse "f(...)" and take its trailer: the same kind
            replacement = parso.parse(f"f({', '.join(kept)})").children[0].children[1]
        else:
            replacement = parso.parse(f"{open_}{', '.join(kept)}{close}").children[0]
        replacement.get_first_leaf().prefix = node.get_first_leaf().prefix
        return replacement

    @classmethod
    def examples(cls):
        return (
            Example("q.where(a == 1, b == 2)", "q.where(b == 2)"),
            Example("q.where(a == 1, b == 2)", "q.where(a == 1)", occurrence=1),
            Example("and_(a, b)", "and_(b)"),
            Example("conds = [a == 1, b == 2]", "conds = [b == 2]"),
        )


class _SwapComparison(Operator):
    source = ""
    target = ""

    def _points(self, node):
        if node.type != "comparison":
            return
        for k, op in enumerate(node.children[1::2]):
            if op.get_code().strip() == self.source:
                yield k, op

    def mutation_positions(self, node):
        for _, op in self._points(node):
            yield (op.start_pos, op.end_pos)

    def mutate(self, node, index):
        k, op = list(self._points(node))[index]
        node.children[k * 2 + 1] = parso.parse(" " + self.target)
        return node

    @classmethod
    def examples(cls):
        return (Example(f"x {cls.source} y", f"x {cls.target} y"),)


class ReplaceInWithNotIn(_SwapComparison):
    source, target = "in", "not in"


class ReplaceNotInWithIn(_SwapComparison):
    source, target = "not in", "in"


_SQL_SWAPS = {"in_": "not_in", "not_in": "in_", "is_": "is_not", "is_not": "is_"}


class SwapSqlMembership(Operator):
    """``col.in_(x)`` into ``col.not_in(x)``, ``col.is_(None)`` into ``col.is_not(None)``
    and back."""

    def mutation_positions(self, node):
        if (
            node.type == "name"
            and node.value in _SQL_SWAPS
            and node.parent.type == "trailer"
            and node.get_previous_leaf().value == "."
        ):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        node.value = _SQL_SWAPS[node.value]
        return node

    @classmethod
    def examples(cls):
        return (
            Example("q.where(t.c.id.in_(ids))", "q.where(t.c.id.not_in(ids))"),
            Example("t.c.owner.is_(None)", "t.c.owner.is_not(None)"),
        )


_OURS = (DropCondition, ReplaceInWithNotIn, ReplaceNotInWithIn, SwapSqlMembership)


class _Provider:
    def __init__(self, operators) -> None:
        self._operators = {op.__name__: op for op in operators}

    def __iter__(self):
        return iter(self._operators)

    def __getitem__(self, name: str):
        return self._operators[name]


def install() -> None:
    """Make these the operators cosmic-ray knows in this process (``core/...`` for the
    kept core ones, ``orc/...`` for ours), for ``init`` and for applying mutations."""
    import cosmic_ray.plugins

    providers = cosmic_ray.plugins.OPERATOR_PROVIDERS
    providers.clear()
    providers["core"] = _Provider(_CORE_KEPT)
    providers["orc"] = _Provider(_OURS)


def names() -> list[str]:
    return [f"core/{op.__name__}" for op in _CORE_KEPT] + [f"orc/{op.__name__}" for op in _OURS]
