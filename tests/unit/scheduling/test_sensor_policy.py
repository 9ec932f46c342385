"""A sensor's next poke and its timeout (issue 15), pure; and what ``tasks why`` says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.authoring.sensor import (
    PokeReturnValue,
    SensorSpecError,
    poke_result,
    sensor_options,
    split_sensor_options,
)
from orchestrator.scheduling.explain import TaskFacts, WorkerFact, explain_task
from orchestrator.scheduling.sensors import SensorPolicy, next_poke

T0 = datetime(2026, 1, 1, tzinfo=UTC)
S = timedelta(seconds=1)


def policy(**kw) -> SensorPolicy:
    return SensorPolicy.of({"poke_interval": 30, "timeout": 300} | kw)


def test_the_next_poke_is_a_poke_interval_later_and_the_last_is_at_the_deadline():
    p = policy()
    assert next_poke(p, first_poke=T0, pokes=1, now=T0) == T0 + 30 * S
    assert next_poke(p, first_poke=T0, pokes=9, now=T0 + 290 * S) == T0 + 300 * S
    assert next_poke(p, first_poke=T0, pokes=10, now=T0 + 300 * S) is None


def test_exponential_backoff_doubles_up_to_max_wait_or_the_timeout():
    p = policy(exponential_backoff=True, max_wait=100)
    assert [p.interval_after(n).total_seconds() for n in range(1, 6)] == [30, 60, 100, 100, 100]
    q = policy(exponential_backoff=True, timeout=200)
    assert q.interval_after(50) == 200 * S  # no overflow, capped by the timeout


def test_a_wake_time_brings_the_next_poke_forward_never_into_the_past():
    p = policy()
    assert next_poke(p, first_poke=T0, pokes=1, now=T0, wake_at=T0 + 5 * S) == T0 + 5 * S
    assert next_poke(p, first_poke=T0, pokes=1, now=T0, wake_at=T0 - 5 * S) == T0


@given(
    interval=st.integers(1, 3600),
    timeout=st.integers(1, 86400),
    backoff=st.booleans(),
    pokes=st.integers(1, 200),
    elapsed=st.integers(0, 100000),
)
def test_a_next_poke_is_never_past_the_deadline_nor_before_now(
    interval, timeout, backoff, pokes, elapsed
):
    p = SensorPolicy.of({"poke_interval": interval, "timeout": max(timeout, interval),
                         "exponential_backoff": backoff})  # fmt: skip
    now = T0 + elapsed * S
    at = next_poke(p, first_poke=T0, pokes=pokes, now=now)
    if now >= p.deadline(T0):
        assert at is None
    else:
        assert at is not None and now < at <= p.deadline(T0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "a sensor needs poke_interval"),
        ({"poke_interval": 0}, "poke_interval must be positive"),
        ({"poke_interval": "30"}, "poke_interval must be a timedelta"),
        ({"poke_interval": 60, "timeout": 59}, "shorter than poke_interval"),
        ({"poke_interval": 60, "mode": "deferrable"}, "mode must be one of"),
        ({"poke_interval": 60, "max_wait": 10}, "max_wait (0:00:10) is shorter"),
        ({"poke_interval": 60, "exponential_backoff": 1}, "exponential_backoff must be True"),
    ],
)
def test_bad_sensor_options_say_what_is_wrong(options, message):
    with pytest.raises(SensorSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sensor_options(**options)


def test_stored_options_are_seconds_and_only_what_is_set():
    assert sensor_options(poke_interval=timedelta(minutes=1), timeout=120, soft_fail=True) == {
        "poke_interval": 60.0, "timeout": 120.0, "mode": "reschedule", "soft_fail": True,
    }  # fmt: skip
    sensor, rest = split_sensor_options({"poke_interval": 5, "timeout": 9, "retries": 2,
                                         "execution_timeout": 3})  # fmt: skip
    assert sensor == {"poke_interval": 5, "timeout": 9}
    assert rest == {"retries": 2, "timeout": 3}


def test_poke_results():
    assert poke_result(0) == (False, None)
    assert poke_result({"a": 1}) == (True, {"a": 1})
    assert poke_result(PokeReturnValue(True, 7)) == (True, 7)
    assert poke_result(PokeReturnValue(False, 7)) == (False, None)


def test_why_names_the_next_poke_and_the_timeout():
    facts = TaskFacts(
        now=T0 + 10 * S, dag_id="d", run_id="r", task_id="s", task_state="up_for_reschedule",
        workers=(WorkerFact("w", ("default",), T0 + 30 * S),), try_number=1, ready_at=T0 + 30 * S,
        poke_count=2, first_poke_at=T0, sensor_deadline=T0 + 300 * S,
    )  # fmt: skip
    [reason] = explain_task(facts)
    assert reason.code == "sensor_waiting"
    assert "next poke at 2026-01-01 00:00:30 UTC" in reason.message
    assert (
        "2 pokes of try 1" in reason.message
        and "times out at 2026-01-01 00:05:00 UTC" in reason.message
    )
    due = TaskFacts(**{**facts.__dict__, "now": T0 + 31 * S})
    assert [r.code for r in explain_task(due)] == ["ready"]
