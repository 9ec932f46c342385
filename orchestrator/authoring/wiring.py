"""``>>`` and ``<<`` for whatever can be wired (a task, a task group), from its
``set_downstream`` / ``set_upstream``: ``a >> b``, ``a << b``, ``[a, b] >> c``."""

from __future__ import annotations

from typing import Any, Self


class Wiring:
    def set_downstream(self, others: Any) -> None:
        raise NotImplementedError

    def set_upstream(self, others: Any) -> None:
        raise NotImplementedError

    def __rshift__(self, other: Any) -> Any:
        self.set_downstream(other)
        return other

    def __lshift__(self, other: Any) -> Any:
        self.set_upstream(other)
        return other

    def __rrshift__(self, other: Any) -> Self:  # [a, b] >> self
        self.set_upstream(other)
        return self

    def __rlshift__(self, other: Any) -> Self:  # [a, b] << self
        self.set_downstream(other)
        return self
