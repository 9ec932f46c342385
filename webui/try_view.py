"""How each try of a task instance ended, in words: lost, timed out, retried...

Pure: the store's try records (``TryRecord``) and the instance's state in, one phrase
per try out. A try's row records its end: its state (``success``, ``failed``,
``timeout`` when the worker killed it at its ``timeout``, ``crashed`` when its process
died, ``skipped``, ``cancelled``, ``marked_success``/``marked_failed`` by a user, and
``up_for_reschedule``/``deferred`` for a sensor between pokes and a deferred try), its
``lost_reason`` (``lease_expired``, ``handed_back``) and its exit status. Whether it
was *retried* is whether a later try follows it (or the instance waits for one).

>>> from types import SimpleNamespace as T
>>> tries = [T(try_number=1, state="timeout", lost_reason=None, exit_status=None, end_date=1),
...          T(try_number=2, state="success", lost_reason=None, exit_status=0, end_date=2)]
>>> exit_reasons(tries, "success")
{1: 'timed out, retried', 2: 'succeeded'}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_WORDS = {
    "success": "succeeded",
    "failed": "failed",
    "timeout": "timed out",
    "crashed": "crashed",
    "skipped": "skipped itself",
    "cancelled": "cancelled",
    "marked_success": "marked success by a user",
    "marked_failed": "marked failed by a user",
    "up_for_reschedule": "rescheduled (waits for its next poke)",
    "deferred": "deferred (waits for its trigger)",
    "running": "running",
}
_LOST = {"lease_expired": "lease expired", "handed_back": "handed back by its worker"}
_RETRYABLE = frozenset({"failed", "timeout", "crashed"})


def exit_reason(t: Any, *, later: bool, instance_state: str) -> str:
    """How try ``t`` ended; ``later``: another try follows it; ``instance_state``: the
    task instance's state now (for the last try: is a retry pending?)."""
    if t.lost_reason:
        words = f"lost: {_LOST.get(t.lost_reason, t.lost_reason.replace('_', ' '))}"
        return f"{words}, run again" if later else words
    if t.end_date is None and t.state == "running":
        return "running"
    words = _WORDS.get(t.state, t.state.replace("_", " "))
    if t.state in _RETRYABLE:
        if later:
            words += ", retried"
        elif instance_state == "up_for_retry":
            words += ", retry pending"
        elif instance_state == "failed":
            words += ", no retries left"
    if t.exit_status not in (None, 0):
        words += f" (exit status {t.exit_status})"
    return words


def exit_reasons(tries: Sequence[Any], instance_state: str) -> dict[int, str]:
    """try number -> :func:`exit_reason`, for tries in try order."""
    last = len(tries) - 1
    return {
        t.try_number: exit_reason(t, later=i < last, instance_state=instance_state)
        for i, t in enumerate(tries)
    }
