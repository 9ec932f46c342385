"""The claim-time checks of issue 14 (orchestrator.scheduling.concurrency.blocked_by) and
what the explainer says about them."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime

import pytest

from orchestrator.scheduling import concurrency
from orchestrator.scheduling.concurrency import GateFacts, blocked_by
from orchestrator.scheduling.explain import TaskFacts, WorkerFact, explain_task

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def codes(g: GateFacts) -> list[str]:
    return [code for code, _, _ in blocked_by(g)]


def test_nothing_declared_blocks_nothing():
    assert codes(GateFacts(dag_running=1000, task_running=1000)) == []


@pytest.mark.parametrize(
    ("past_run", "past_state", "blocked"),
    [
        (None, None, False),  # the first run, or the task did not exist then
        ("r0", "success", False),
        ("r0", "skipped", False),
        ("r0", "failed", True),
        ("r0", "running", True),
        ("r0", "scheduled", True),
        ("r0", "upstream_failed", True),
        ("r0", "cancelled", True),
    ],
)
def test_depends_on_past(past_run, past_state, blocked):
    g = GateFacts(task_id="t", depends_on_past=True, past_run_id=past_run, past_state=past_state)
    assert codes(g) == (["depends_on_past"] if blocked else [])
    if blocked:
        message = blocked_by(g)[0][1]
        assert "t in the previous run r0" in message and past_state in message


@pytest.mark.parametrize(
    ("running", "limit", "blocked"), [(0, 1, False), (1, 1, True), (3, 4, False), (5, 4, True)]
)
def test_limits_block_at_and_over_the_limit(running, limit, blocked):
    assert bool(codes(GateFacts(max_active_tasks=limit, dag_running=running))) is blocked
    assert bool(codes(GateFacts(max_active_tis_per_dag=limit, task_running=running))) is blocked


def test_every_condition_is_reported():
    g = GateFacts(
        task_id="t", max_active_tasks=1, dag_running=1, max_active_tis_per_dag=1,
        task_running=1, depends_on_past=True, past_run_id="r0", past_state="failed",
    )  # fmt: skip
    assert codes(g) == ["depends_on_past", "max_active_tasks", "max_active_tis_per_dag"]


def test_the_explainer_says_why_a_ready_task_is_not_claimed():
    worker = WorkerFact("w", ("default",), NOW)
    gate = GateFacts(task_id="t", max_active_tis_per_dag=1, task_running=1)
    facts = TaskFacts(now=NOW, dag_id="d", run_id="r", task_id="t", task_state="queued",
                      workers=(worker,), gate=gate)  # fmt: skip
    reasons = explain_task(facts)
    assert [r.code for r in reasons] == ["max_active_tis_per_dag"]
    assert reasons[0].to_dict()["facts"] == {"running": 1, "limit": 1}
    free = TaskFacts(now=NOW, dag_id="d", run_id="r", task_id="t", task_state="queued",
                     workers=(worker,), gate=GateFacts(task_id="t", max_active_tis_per_dag=1))  # fmt: skip
    assert [r.code for r in explain_task(free)] == ["ready"]


def test_doctests():
    assert doctest.testmod(concurrency).failed == 0
