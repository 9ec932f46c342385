"""``>>`` and ``<<`` for whatever can be wired (a task, a task group), from its
``set_downstream`` / ``set_upstream``: ``a >> b``, ``a << b``, ``[a, b] >> c``; an object
with ``wire_after`` / ``wire_before`` (an edge label) takes the wiring over itself."""

from __future__ import annotations

from typing import Any, Self


class Wiring:
    def set_downstream(self, others: Any) -> None:
        raise NotImplementedError

    def set_upstream(self, others: Any) -> None:
        raise NotImplementedError

    def __rshift__(self, other: Any) -> Any:
        if hasattr(other, "wire_after"):  # issue 26: an edge label (a >> Label("x") >> b)
            return other.wire_after(self)
        self.set_downstream(other)
        return other

    def __lshift__(self, other: Any) -> Any:
        if hasattr(other, "wire_before"):  # issue 26: b << Label("x") << a
            return other.wire_before(self)
        self.set_upstream(other)
        return other

    def __rrshift__(self, other: Any) -> Self:  # [a, b] >> self
        self.set_upstream(other)
        return self

    def __rlshift__(self, other: Any) -> Self:  # [a, b] << self
        self.set_downstream(other)
        return self
