"""Retry backoff (orchestrator.scheduling.retry.RetryPolicy.delay_after)."""

from __future__ import annotations

import doctest
from datetime import timedelta

import pytest

from orchestrator.scheduling import retry
from orchestrator.scheduling.retry import RetryPolicy

SECONDS = timedelta(seconds=1)


def secs(policy: RetryPolicy, failed_try: int, key: str = "dag/run/task") -> float:
    return policy.delay_after(failed_try, key).total_seconds()


def test_exponential_growth_without_jitter():
    p = RetryPolicy(retries=6, retry_delay=timedelta(seconds=10), jitter=False)
    assert [secs(p, n) for n in range(1, 7)] == [10, 20, 40, 80, 160, 320]


def test_linear_when_not_exponential():
    p = RetryPolicy(retry_delay=timedelta(seconds=10), exponential=False, jitter=False)
    assert [secs(p, n) for n in range(1, 5)] == [10, 10, 10, 10]


def test_capped_at_max_retry_delay():
    p = RetryPolicy(
        retry_delay=timedelta(seconds=10), max_retry_delay=timedelta(seconds=45), jitter=False
    )
    assert [secs(p, n) for n in range(1, 7)] == [10, 20, 40, 45, 45, 45]


def test_huge_try_numbers_saturate_at_the_cap():
    p = RetryPolicy(retry_delay=timedelta(seconds=1), max_retry_delay=timedelta(hours=1))
    assert secs(p, 5000) <= 3600
    assert RetryPolicy(jitter=False).delay_after(10_000, "k") == timedelta(hours=1)


def test_zero_delay_stays_zero():
    p = RetryPolicy(retry_delay=timedelta(0))
    assert [secs(p, n) for n in (1, 2, 10)] == [0, 0, 0]


@pytest.mark.parametrize("key", [f"dag/run_{i}/task" for i in range(200)])
def test_jitter_only_adds_up_to_the_delay_again_and_the_cap_still_applies(key):
    p = RetryPolicy(retry_delay=timedelta(seconds=10), max_retry_delay=timedelta(seconds=300))
    for n in range(1, 12):
        base = 10 * 2 ** (n - 1)
        d = secs(p, n, key)
        assert min(base, 300) <= d <= min(2 * base, 300), (key, n, d, base)


def test_retry_delay_is_the_least_wait():
    """Airflow users read retry_delay=30s as "wait at least 30 s" (Airflow waits between
    the delay and twice it); equal jitter used to retry after as little as 15 s."""
    p = RetryPolicy(retry_delay=timedelta(seconds=30))
    first = [secs(p, 1, f"dag/run/task_{i}") for i in range(500)]
    assert min(first) >= 30
    assert max(first) < 60
    assert max(first) - min(first) > 20  # still spread out, not in lockstep
    fixed = RetryPolicy(retry_delay=timedelta(seconds=30), exponential=False)
    assert min(secs(fixed, n, f"k{i}") for i in range(200) for n in (1, 5)) >= 30


def test_the_cap_wins_over_the_least_wait():
    p = RetryPolicy(retry_delay=timedelta(seconds=30), max_retry_delay=timedelta(seconds=20))
    assert {secs(p, n, f"k{i}") for i in range(50) for n in (1, 2, 9)} == {20}
    p = RetryPolicy(retry_delay=timedelta(seconds=30), max_retry_delay=timedelta(seconds=45))
    assert all(30 <= secs(p, 1, f"k{i}") <= 45 for i in range(200))
    assert {secs(p, 2, f"k{i}") for i in range(50)} == {45}


def test_jitter_is_deterministic_per_key_and_spreads_keys():
    p = RetryPolicy(retry_delay=timedelta(seconds=100))
    assert secs(p, 3, "a/b/c") == secs(p, 3, "a/b/c")
    assert RetryPolicy(retry_delay=timedelta(seconds=100)).delay_after(3, "a/b/c") == p.delay_after(
        3, "a/b/c"
    )
    spread = {secs(p, 1, f"dag/run/task_{i}") for i in range(50)}
    assert len(spread) > 40  # many tasks failing together do not retry in lockstep


@pytest.mark.parametrize(
    ("delay", "cap"), [(10, 3600), (10, 15), (10, 25), (1, 1), (30, 29), (7, 1000)]
)
def test_delays_never_decrease_across_tries_even_at_the_cap(delay, cap):
    p = RetryPolicy(retry_delay=timedelta(seconds=delay), max_retry_delay=timedelta(seconds=cap))
    for i in range(300):
        key = f"dag/run/task_{i}"
        delays = [secs(p, n, key) for n in range(1, 20)]
        assert delays == sorted(delays), (key, delays)
        assert max(delays) <= cap


def test_max_tries():
    assert RetryPolicy(retries=0).max_tries == 1
    assert RetryPolicy(retries=3).max_tries == 4


def test_doctests():
    assert doctest.testmod(retry).failed == 0


def test_a_try_number_below_one_waits_as_the_first_retry():
    """Issue 31: the exponent is clamped at 0, so a try number of 0 (or less) never waits
    less than retry_delay."""
    p = RetryPolicy(retry_delay=timedelta(seconds=10), jitter=False)
    assert [secs(p, n) for n in (-3, 0, 1)] == [10, 10, 10]
    jittered = RetryPolicy(retry_delay=timedelta(seconds=10))
    assert secs(jittered, 0, "k") == secs(jittered, 1, "k") >= 10


def test_sub_second_delays_are_jittered_too():
    """Issue 31: jitter applies to any positive delay, a 200 ms one included."""
    p = RetryPolicy(retry_delay=timedelta(milliseconds=200))
    first = [secs(p, 1, f"dag/run/task_{i}") for i in range(100)]
    assert min(first) >= 0.2 and max(first) < 0.4
    assert max(first) - min(first) > 0.1
