"""Asset conditions, pure: evaluation, nesting, storage round trip, run planning and
the text of what a DAG waits for (issue 15)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.scheduling.asset_conditions import (
    AssetAll,
    AssetAny,
    AssetRef,
    AssetWait,
    QueuedEvent,
    ago,
    condition_from_data,
    explain_waits,
    plan_asset_runs,
    uri_problem,
)

A, B, C = AssetRef("s3://a"), AssetRef("s3://b"), AssetRef("s3://c")


def test_all_needs_every_member_any_needs_one():
    both, either = A & B, A | B
    for present in map(set, itertools.chain.from_iterable(
        itertools.combinations(["s3://a", "s3://b"], n) for n in range(3)
    )):  # fmt: skip
        assert both.evaluate(present) == ({"s3://a", "s3://b"} <= present)
        assert either.evaluate(present) == bool(present)


def test_nesting_flattens_same_operators_and_keeps_mixed_ones():
    assert AssetAny(A, B, C) == (A | B | C)
    assert AssetAll(A, B, C) == (A & B & C)
    nested = (A & B) | C
    assert isinstance(nested, AssetAny) and nested.objects == (AssetAll(A, B), C)
    assert nested.describe() == "(s3://a & s3://b) | s3://c"
    assert nested.evaluate({"s3://c"}) and nested.evaluate({"s3://a", "s3://b"})
    assert not nested.evaluate({"s3://a"})
    assert (A & (B | C)).describe() == "s3://a & (s3://b | s3://c)"


def test_a_condition_survives_storage():
    for cond in (A, A & B, A | B, (A & B) | C, A & (B | (C & A))):
        assert condition_from_data(cond.to_data()) == cond
    with pytest.raises(ValueError):
        condition_from_data({"both": ["s3://a"]})


def test_a_condition_refuses_what_is_not_an_asset():
    with pytest.raises(TypeError):
        AssetAll(A, "s3://b")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        AssetAny()
    assert (A.__or__("x")) is NotImplemented


@pytest.mark.parametrize(
    "uri",
    ["s3://bucket/key", "warehouse://sales/daily", "file:///data/x.csv", "postgres://db/t?x=1"],
)
def test_good_uris(uri):
    assert uri_problem(uri) is None


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("sales", "not an asset URI"),
        ("", "must not be empty"),
        ("s3://", "not an asset URI"),
        ("://x", "not an asset URI"),
        ("1s3://x", "not an asset URI"),
        ("s3://a b", "whitespace"),
        ("s3://a\nb", "whitespace"),
        ("s3://" + "x" * 1000, "at most 1000"),
        (5, "must be a string"),
    ],
)
def test_bad_uris_say_why(uri, why):
    assert why in (uri_problem(uri) or "")


def _events(*uris: str) -> list[QueuedEvent]:
    return [QueuedEvent(i + 1, u) for i, u in enumerate(uris)]


def test_coalesce_consumes_the_whole_queue_in_one_run_once_the_condition_holds():
    assert plan_asset_runs(A & B, _events("s3://a", "s3://a"), "coalesce") == []
    queue = _events("s3://a", "s3://a", "s3://b")
    assert plan_asset_runs(A & B, queue, "coalesce") == [queue]
    assert plan_asset_runs(A | B, [], "coalesce") == []


def test_backfill_replays_each_shortest_satisfying_prefix():
    queue = _events("s3://a", "s3://b", "s3://a")
    assert [[e.event_id for e in g] for g in plan_asset_runs(A | B, queue, "backfill")] == [
        [1], [2], [3],
    ]  # fmt: skip
    queue = _events("s3://a", "s3://a", "s3://b", "s3://a")
    assert [[e.event_id for e in g] for g in plan_asset_runs(A & B, queue, "backfill")] == [
        [1, 2, 3]
    ]  # the last a waits for a b


@given(
    st.lists(st.sampled_from(["s3://a", "s3://b", "s3://c"]), max_size=30),
    st.sampled_from(["coalesce", "backfill", "skip"]),
    st.sampled_from([A & B, A | B, (A & B) | C, A & (B | C)]),
)
def test_every_event_is_consumed_at_most_once_and_each_run_satisfies_the_condition(
    uris, policy, cond
):
    queue = _events(*uris)
    runs = plan_asset_runs(cond, list(reversed(queue)), policy)  # order given does not matter
    ids = [e.event_id for g in runs for e in g]
    assert len(ids) == len(set(ids))  # never twice
    assert ids == sorted(ids)  # oldest first
    for g in runs:
        assert cond.evaluate({e.uri for e in g})
    left = [e for e in queue if e.event_id not in set(ids)]
    if policy == "backfill":  # only a tail that does not yet satisfy is left
        assert not cond.evaluate({e.uri for e in left}) or not left
        assert all(e.event_id > max(ids, default=0) for e in left)
    else:
        assert (runs == []) == (not cond.evaluate({e.uri for e in queue}))


NOW = datetime(2026, 3, 1, 13, 0, tzinfo=UTC)


def test_ago_in_words():
    assert ago(NOW - timedelta(seconds=5), NOW) == "5 s ago"
    assert ago(NOW - timedelta(minutes=12), NOW) == "12 min ago"
    assert ago(NOW - timedelta(hours=3, minutes=5), NOW) == "3 h ago"
    assert ago(NOW - timedelta(days=2), NOW) == "2 d ago"


def test_what_a_dag_waits_for_in_words():
    waits = [
        AssetWait("s3://sales", "sales", 1, NOW.replace(hour=10, minute=2), NOW),
        AssetWait("s3://costs", "costs", 0, None, NOW - timedelta(hours=3)),
    ]
    cond = AssetRef("s3://sales") & AssetRef("s3://costs")
    met, text = explain_waits(cond, waits, NOW)
    assert not met
    assert text == "waiting for costs: last event 3 h ago; sales arrived 10:02"
    never = [AssetWait("s3://sales", "sales", 0, None, None), waits[1]]
    assert explain_waits(cond, never, NOW)[1] == (
        "waiting for sales: no event yet, costs: last event 3 h ago"
    )
    either = AssetRef("s3://sales") | AssetRef("s3://costs")
    assert explain_waits(either, never, NOW)[1] == (
        "waiting for one of sales: no event yet, costs: last event 3 h ago"
    )
    met, text = explain_waits(either, waits, NOW)
    assert met and "is met" in text and "sales arrived 10:02" in text
