"""The explainer, pure: every cause, with the fact behind it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from orchestrator.scheduling import explain as ex
from orchestrator.scheduling.explain import (
    DagFacts,
    PoolFact,
    SlotHolder,
    TaskFacts,
    WorkerFact,
    explain_dag,
    explain_task,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
LIVE = WorkerFact("w1", ("default",), NOW - timedelta(seconds=5))


def facts(**kw) -> TaskFacts:
    base = dict(now=NOW, dag_id="etl", run_id="r1", task_id="load", task_state="queued",
                workers=(LIVE,))  # fmt: skip
    return TaskFacts(**(base | kw))


def codes(reasons) -> list[str]:
    return [r.code for r in reasons]


def test_ready_task_waits_only_for_a_worker():
    assert codes(explain_task(facts())) == [ex.READY]


def test_paused_dag():
    reasons = explain_task(facts(dag_paused=True))
    assert codes(reasons) == [ex.DAG_PAUSED]
    assert reasons[0].facts == {"dag_id": "etl"}


def test_run_queued_names_the_runs_holding_the_slots():
    holders = (SlotHolder("r0", NOW - timedelta(days=1)),)
    (reason,) = explain_task(facts(run_state="queued", max_active_runs=1, slot_holders=holders,
                                   task_state="scheduled"))  # fmt: skip
    assert reason.code == ex.RUN_QUEUED
    assert reason.facts == {"max_active_runs": 1, "holders": ["r0"]}
    assert "r0" in reason.message


def test_upstream_not_finished_lists_which_and_their_state():
    f = facts(task_state="scheduled", upstream=(("extract", "running"), ("clean", "success")))
    (reason,) = explain_task(f)
    assert reason.code == ex.UPSTREAM_WAITING
    assert reason.facts["upstream"] == [{"task_id": "extract", "state": "running"}]
    assert "extract (running)" in reason.message and "clean" not in reason.message


def test_upstream_can_no_longer_satisfy_the_trigger_rule():
    f = facts(task_state="scheduled", upstream=(("extract", "failed"),), trigger_rule="all_success")
    (reason,) = explain_task(f)
    assert reason.code == ex.UPSTREAM_BLOCKED
    assert reason.facts["decision"] == "upstream_failed"


def test_upstream_satisfied_means_release_on_next_tick():
    f = facts(task_state="scheduled", upstream=(("extract", "success"),))
    assert codes(explain_task(f)) == []


def test_no_live_worker_on_the_queue():
    stale = WorkerFact("w2", ("gpu",), NOW - timedelta(minutes=10))
    other = WorkerFact("w3", ("default",), NOW)
    (reason,) = explain_task(facts(queue="gpu", workers=(stale, other)))
    assert reason.code == ex.NO_WORKER
    assert reason.facts["last_heartbeat"] == stale.heartbeat_at
    stopped = WorkerFact("w4", ("gpu",), NOW, stopped_at=NOW)
    assert codes(explain_task(facts(queue="gpu", workers=(stopped,)))) == [ex.NO_WORKER]


def test_retry_backoff_until():
    until = NOW + timedelta(seconds=40)
    (reason,) = explain_task(facts(task_state="up_for_retry", ready_at=until, try_number=1,
                                   max_tries=3, error="Traceback...\nValueError: bad"))  # fmt: skip
    assert reason.code == ex.RETRY_BACKOFF
    assert reason.facts["ready_at"] == until
    assert "ValueError: bad" in reason.message
    past = facts(task_state="up_for_retry", ready_at=NOW - timedelta(seconds=1))
    assert codes(explain_task(past)) == [ex.READY]


def test_leased_by_a_worker_with_last_heartbeat():
    f = facts(task_state="running", owner="w1", lease_expires_at=NOW + timedelta(seconds=20),
              owner_heartbeat_at=NOW - timedelta(seconds=3), try_number=2, max_tries=3)  # fmt: skip
    (reason,) = explain_task(f)
    assert reason.code == ex.LEASED
    assert reason.facts["owner"] == "w1" and reason.facts["last_heartbeat"] == NOW - timedelta(
        seconds=3
    )
    expired = facts(task_state="running", owner="w1", lease_expires_at=NOW - timedelta(seconds=1))
    assert codes(explain_task(expired)) == [ex.LEASE_EXPIRED]


def test_dead_lettered_after_n_tries():
    (reason,) = explain_task(facts(task_state="failed", try_number=4, max_tries=4, error="boom"))
    assert reason.code == ex.DEAD_LETTERED
    assert reason.facts["tries"] == 4
    assert "orchestrator tasks retry r1 load" in reason.message


def test_pool_full_is_reported_when_pools_are_given():
    pool = PoolFact("db", 2, ("r1.a", "r2.a"))
    (reason,) = explain_task(facts(pools=(pool,)))
    assert reason.code == ex.POOL_FULL and reason.facts["holders"] == ["r1.a", "r2.a"]


def test_several_causes_at_once_and_json():
    f = facts(dag_paused=True, task_state="scheduled", upstream=(("a", "queued"),), workers=())
    reasons = explain_task(f)
    assert codes(reasons) == [ex.DAG_PAUSED, ex.UPSTREAM_WAITING, ex.NO_WORKER]
    assert reasons[2].to_dict()["facts"]["last_heartbeat"] is None


def dag_facts(**kw) -> DagFacts:
    base = dict(now=NOW, dag_id="etl", leader="s1", leader_expires_at=NOW + timedelta(seconds=20),
                expected_fire=NOW - timedelta(hours=1), run_for_expected="etl__scheduled__x")  # fmt: skip
    return DagFacts(**(base | kw))


def test_dag_why_run_exists():
    assert codes(explain_dag(dag_facts())) == [ex.RUN_EXISTS]


def test_dag_why_each_cause():
    assert codes(explain_dag(dag_facts(is_paused=True, run_for_expected=None))) == [ex.DAG_PAUSED]
    assert codes(explain_dag(dag_facts(has_schedule=False))) == [ex.NO_SCHEDULE]
    start = NOW + timedelta(days=1)
    assert ex.BEFORE_START in codes(explain_dag(dag_facts(start_date=start, expected_fire=None)))
    end = NOW - timedelta(days=1)
    got = codes(explain_dag(dag_facts(end_date=end, schedule_exhausted=True)))
    assert got == [ex.AFTER_END, ex.EXHAUSTED, ex.RUN_EXISTS]
    got = explain_dag(
        dag_facts(leader_expires_at=NOW - timedelta(seconds=1), run_for_expected=None)
    )
    assert codes(got) == [ex.NO_LEADER]
    decision = (NOW - timedelta(minutes=30), "fire_skipped", "missed fire times ... skipped")
    got = explain_dag(dag_facts(misfire_events=(decision,), run_for_expected=None))
    assert codes(got) == [ex.MISFIRE_DECISION] and "fire_skipped" in got[0].message
    holders = (SlotHolder("etl__scheduled__a", NOW - timedelta(hours=2)),)
    got = explain_dag(dag_facts(overlap="skip", max_active_runs=1, active_runs=holders,
                                run_for_expected=None))  # fmt: skip
    assert codes(got) == [ex.OVERLAP] and got[0].facts["holders"] == ["etl__scheduled__a"]
    got = explain_dag(dag_facts(expected_fire=None, run_for_expected=None, next_fire=NOW))
    assert codes(got) == [ex.NOT_DUE]
