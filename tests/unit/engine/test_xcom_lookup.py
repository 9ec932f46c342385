"""The worker's answers to a try's results lookups (engine/xcom_lookup.py): only the
try's own tag is answered, a malformed request or an oversized push is an error reply,
never an exception in the worker."""

from __future__ import annotations

import json

from orchestrator.engine.secrets_chain import answer_lookup
from orchestrator.engine.task_secrets import LOOKUP
from orchestrator.engine.xcom_lookup import answer_results
from orchestrator.errors import StateError


class FakeStore:
    def __init__(self) -> None:
        self.pushed: list[tuple] = []

    def pull_result(self, ti_id, task_id, key, map_indexes):
        if task_id == "late":
            raise StateError("task 'late' has not finished yet (state running)")
        return json.dumps([ti_id, task_id, key, map_indexes])

    def push_xcom(self, ti_id, try_number, key, value):
        self.pushed.append((ti_id, try_number, key, value))


class Channel:
    def __init__(self) -> None:
        self.sent: list = []

    def send(self, value) -> None:
        self.sent.append(value)


def _message(tag, kind, request) -> tuple:
    return (LOOKUP, tag, 123, kind, json.dumps(request))


def test_pulls_and_pushes_are_answered_for_the_trys_own_instance_only():
    store, channel = FakeStore(), Channel()

    def results(message):
        return answer_results(store, 10, message)

    pull = _message((7, 2), "xcom_pull", {"task_id": "x", "key": "k", "map_indexes": [1]})
    assert answer_lookup(None, channel, pull, (7, 2), results)
    assert channel.sent == [{"found": json.dumps([7, "x", "k", [1]])}]
    forged = _message((8, 1), "xcom_pull", {"task_id": "x", "key": "k"})
    assert not answer_lookup(None, channel, forged, (7, 2), results)  # another instance's tag
    assert len(channel.sent) == 1
    push = _message((7, 2), "xcom_push", {"key": "k", "value": '"v"'})
    assert answer_lookup(None, channel, push, (7, 2), results)
    assert store.pushed == [(7, 2, "k", '"v"')]


def test_errors_are_replies_naming_what_went_wrong():
    store = FakeStore()
    late = answer_results(store, 10, _message((7, 2), "xcom_pull", {"task_id": "late", "key": "k"}))
    assert late == {"error": "task 'late' has not finished yet (state running)"}
    big = answer_results(store, 10, _message((7, 2), "xcom_push", {"key": "k", "value": "x" * 11}))
    assert big == {"error": "xcom_push 'k': the value is over the 10-byte limit (max_result_bytes)"}
    bad = answer_results(store, 10, (LOOKUP, (7, 2), 1, "xcom_pull", "{not json"))
    assert bad["error"].startswith("cannot xcom pull: JSONDecodeError")
    assert store.pushed == []
