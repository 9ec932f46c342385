"""Tries lost to infrastructure (issue 12, item 6), on both backends, on a fake clock.

A try whose lease expired or that a worker handed back on shutdown is *lost*: it gets
its try record (state ``lost``, with the reason), the next try has the next number (so
the lost worker's late report is fenced out), and it does not spend the task's retries,
up to the task's ``max_lost_tries`` (default: the setting, 2). The loss after that
counts as a failed try: ``lost 3 times: ...``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from orchestrator.observability.metrics import render
from orchestrator.store import Store

LEASE = timedelta(seconds=30)


def _one_task_run(harness, write_dag, *, retries: int = 0, options: str = "") -> str:
    write_dag(
        "single.py",
        f"""
        from orchestrator import DAG, task

        with DAG("single", schedule=None, retry_delay=5{options}) as dag:
            @task(retries={retries})
            def only(ctx):
                return 1
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("single", harness.clock.now())
    harness.tick()
    assert harness.store.task_instance(run.run_id, "only").state == "queued"
    return run.run_id


def _lose(harness, owner: str = "worker-A"):
    """Claim the task and let its lease expire: returns (claim, reaped)."""
    store, clock = harness.store, harness.clock
    [claim] = store.claim(owner, clock.now(), LEASE, limit=1)
    clock.advance(LEASE + timedelta(seconds=1))
    return claim, harness.tick().reaped


def _kinds(store: Store, kind: str) -> list:
    return store.events(kind=kind, limit=1000)


def test_a_lost_try_with_retries_0_is_retried_and_the_run_succeeds(harness, write_dag):
    store = harness.store
    run_id = _one_task_run(harness, write_dag, retries=0)
    _, reaped = _lose(harness)
    assert reaped == [(run_id, "only", 1, "queued")]
    done = harness.run_until_finished(run_id)
    assert done.state == "success"
    tries = store.tries(run_id, "only")
    assert [(t.try_number, t.state, t.lost_reason) for t in tries] == [
        (1, "lost", "lease_expired"),
        (2, "success", None),
    ]
    ti = store.task_instance(run_id, "only")
    assert (ti.try_number, ti.max_tries, ti.lost_tries, ti.error) == (2, 2, 1, None)


@pytest.mark.parametrize(("retries", "third"), [(0, "failed"), (1, "up_for_retry")])
def test_the_loss_after_max_lost_tries_counts_as_a_failed_try(harness, write_dag, retries, third):
    store = harness.store
    run_id = _one_task_run(harness, write_dag, retries=retries)
    for n in (1, 2):
        _, reaped = _lose(harness)
        assert reaped == [(run_id, "only", n, "queued")]
    _, reaped = _lose(harness)
    assert reaped == [(run_id, "only", 3, third)]
    ti = store.task_instance(run_id, "only")
    assert ti.state == third and ti.lost_tries == 3
    assert ti.error.startswith("lost 3 times: lease expired at ")
    assert [t.state for t in store.tries(run_id, "only")] == ["lost"] * 3
    assert len(_kinds(store, "task_lost")) == 2
    if third == "failed":
        [dead] = _kinds(store, "task_dead_lettered")
        assert "lost 3 times" in dead.message
        assert store.get_run(run_id).state == "failed"
    else:  # the user's one retry is spent on the third loss, with its backoff
        assert ti.ready_at > harness.clock.now()
        assert len(_kinds(store, "task_retry")) == 1


def test_a_stale_report_of_the_lost_try_is_fenced_out(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=0)
    lost, _ = _lose(harness)
    # before anyone takes the task again: the late report changes nothing
    before = store.task_instance(run_id, "only")
    assert store.finish_success(lost, '"late"', clock.now()) is False
    assert store.finish_failure(lost, "late failure", 1, clock.now()) is None
    assert store.task_instance(run_id, "only") == before
    # the same worker (a restarted one reusing its id) takes it again as try 2
    [again] = store.claim("worker-A", clock.now(), LEASE, limit=1)
    assert (again.ti_id, again.try_number, again.owner) == (lost.ti_id, 2, "worker-A")
    assert store.finish_success(lost, '"late"', clock.now()) is False
    assert store.hand_back(lost, clock.now()) is False
    ti = store.task_instance(run_id, "only")
    assert (ti.state, ti.try_number, ti.lost_tries) == ("running", 2, 1)
    stale = _kinds(store, "stale_write_rejected")
    assert len(stale) == 3 and all(e.try_number == 1 for e in stale)
    assert store.finish_success(again, '"two"', clock.now()) is True
    assert store.results(run_id, ["only"]) == {"only": '"two"'}
    assert [t.state for t in store.tries(run_id, "only")] == ["lost", "success"]


def test_a_late_success_after_the_reaper_chose_up_for_retry_is_refused(harness, write_dag):
    """Issue 31: the free lost tries are spent, so the reaper turns the third expired
    lease into up_for_retry, keeping the try number and the owner. Only the success
    write's ``state = 'running'`` condition then tells the worker's late report from a
    live one: it must change nothing and be recorded as stale."""
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=1)
    for n in (1, 2):
        _, reaped = _lose(harness)
        assert reaped == [(run_id, "only", n, "queued")]
    late, reaped = _lose(harness)
    assert reaped == [(run_id, "only", 3, "up_for_retry")]
    before = store.task_instance(run_id, "only")
    assert (before.try_number, before.owner) == (late.try_number, late.owner)  # same key
    tries_before = store.tries(run_id, "only")

    assert store.finish_success(late, '"late"', clock.now()) is False
    [round_], claims = store.finish_and_claim(
        [(late, '"late again"', clock.now())], late.owner, clock.now(), LEASE, limit=5
    )
    assert round_.recorded is False and claims == []  # not due yet: its backoff runs

    assert store.task_instance(run_id, "only") == before
    assert store.tries(run_id, "only") == tries_before
    assert [t.state for t in tries_before] == ["lost"] * 3
    assert store.results(run_id, ["only"]) == {}
    assert store.get_run(run_id).state == "running"
    stale = _kinds(store, "stale_write_rejected")
    assert len(stale) == 2 and all(e.try_number == 3 for e in stale)
    # the retry it was given still happens, as try 4, and its success counts
    clock.advance(before.ready_at - clock.now())
    [retry] = store.claim("worker-B", clock.now(), LEASE, limit=1)
    assert (retry.ti_id, retry.try_number) == (late.ti_id, 4)
    assert store.finish_success(retry, '"four"', clock.now()) is True
    assert store.results(run_id, ["only"]) == {"only": '"four"'}


def test_handed_back_tries_count_towards_the_same_bound(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=0)
    for n in (1, 2):
        [claim] = store.claim("leaving", clock.now(), LEASE, limit=1)
        assert store.hand_back(claim, clock.now()) is True
        ti = store.task_instance(run_id, "only")
        assert (ti.state, ti.lost_tries, ti.max_tries) == ("queued", n, 1 + n)
    _, reaped = _lose(harness)
    assert reaped == [(run_id, "only", 3, "failed")]
    tries = store.tries(run_id, "only")
    assert [t.lost_reason for t in tries] == ["handed_back", "handed_back", "lease_expired"]
    assert store.task_instance(run_id, "only").error.startswith("lost 3 times: lease expired")


@pytest.mark.parametrize(
    ("dag_option", "store_bound", "free"),
    [
        ("", 2, 2),  # the setting's default
        ("", 1, 1),  # ORCHESTRATOR_MAX_LOST_TRIES=1
        (", max_lost_tries=0", 2, 0),  # the DAG's own bound wins over the setting
        (", max_lost_tries=3", 1, 3),
    ],
)
def test_max_lost_tries_comes_from_the_dag_or_the_setting(
    harness, write_dag, settings, dag_option, store_bound, free
):
    store = Store(settings.database_url, max_lost_tries=store_bound)
    try:
        harness.scheduler.store = store  # the reaper reads the bound from its store
        run_id = _one_task_run(harness, write_dag, retries=0, options=dag_option)
        for n in range(1, free + 1):
            assert _lose(harness)[1] == [(run_id, "only", n, "queued")]
        assert _lose(harness)[1] == [(run_id, "only", free + 1, "failed")]
        times = "time" if free == 0 else "times"
        assert store.task_instance(run_id, "only").error.startswith(f"lost {free + 1} {times}: ")
    finally:
        store.dispose()


def test_a_task_option_overrides_the_dag_option(harness, write_dag):
    store = harness.store
    write_dag(
        "two.py",
        """
        from orchestrator import DAG, task

        with DAG("two", schedule=None, max_lost_tries=0) as dag:
            @task
            def strict(ctx):
                return 1

            @task(max_lost_tries=5)
            def tolerant(ctx):
                return 2
        """,
    )
    harness.parse()
    run = store.trigger_run("two", harness.clock.now())
    harness.tick()
    assert len(store.claim("w", harness.clock.now(), LEASE, limit=2)) == 2
    harness.clock.advance(LEASE + timedelta(seconds=1))
    reaped = sorted(harness.tick().reaped)
    assert reaped == [(run.run_id, "strict", 1, "failed"), (run.run_id, "tolerant", 1, "queued")]


def test_clearing_a_task_gives_it_a_fresh_set_of_lost_tries(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=0, options=", max_lost_tries=1")
    _lose(harness)
    assert _lose(harness)[1] == [(run_id, "only", 2, "failed")]
    assert store.clear_task(run_id, "only", clock.now()) == ["only"]
    harness.tick()
    ti = store.task_instance(run_id, "only")
    assert (ti.state, ti.lost_tries) == ("queued", 0)
    assert _lose(harness)[1] == [(run_id, "only", 3, "queued")]  # free again


def test_lost_tries_are_counted_in_metrics(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=0)
    _lose(harness)
    [claim] = store.claim("leaving", clock.now(), LEASE, limit=1)
    store.hand_back(claim, clock.now())
    assert harness.run_until_finished(run_id).state == "success"
    text = render(store, clock.now()).decode()
    assert 'orchestrator_task_tries_total{outcome="lost"} 2.0' in text
    assert 'orchestrator_task_tries_total{outcome="failed"} 0.0' in text
    assert 'orchestrator_task_tries_total{outcome="started"} 3.0' in text
    assert 'orchestrator_task_tries_lost_total{reason="lease_expired"} 1.0' in text
    assert 'orchestrator_task_tries_lost_total{reason="handed_back"} 1.0' in text


def test_the_reaper_wakes_the_workers_for_a_lost_try(harness, write_dag, store, settings):
    import threading

    from orchestrator.engine.scheduler import Scheduler

    run_id = _one_task_run(harness, write_dag, retries=0)
    woken = threading.Event()
    harness.scheduler = Scheduler(
        store, harness.clock, settings, scheduler_id="test-scheduler", on_release=woken
    )
    harness.tick()
    woken.clear()
    assert _lose(harness)[1] == [(run_id, "only", 1, "queued")]
    assert woken.is_set()  # claimable now: no worker should wait for its poll


def test_the_backoff_after_a_lost_try_counts_only_the_tasks_own_failures(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=2)
    _lose(harness)  # try 1: lost, free
    [claim] = store.claim("w", clock.now(), LEASE, limit=1)
    assert claim.try_number == 2
    assert store.finish_failure(claim, "boom", 1, clock.now()) == "up_for_retry"
    ti = store.task_instance(run_id, "only")
    policy = store.spec("single", store.get_run(run_id).version_hash).tasks["only"].retry_policy
    # the delay of a first failure, not of a second one
    assert ti.ready_at - clock.now() == policy.delay_after(1, f"single/{run_id}/only")
    assert policy.delay_after(1, "k") < policy.delay_after(2, "k")
