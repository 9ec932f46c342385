"""Claims made ahead of a free task process (``worker_prefetch``), on both backends:
bounded, started as processes free, and given back unchanged when they wait too long
or the worker drains (issue 14: the mapping benchmark's throughput)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from orchestrator.engine import worker_prefetch as worker_module
from orchestrator.engine.worker import Worker
from orchestrator.store.core import models as m

LEASE = timedelta(seconds=30)
ti = m.task_instances


def _running(store) -> int:
    with store.read() as conn:
        return conn.execute(
            select(func.count()).select_from(ti).where(ti.c.state == "running")
        ).scalar_one()


def _tries(store, run_id: str, task_id: str) -> list[tuple[int, str]]:
    return [(t.try_number, t.state) for t in store.tries(run_id, task_id)]


def _start(harness, write_dag, source: str, dag_id: str) -> str:
    write_dag(f"{dag_id}.py", "from orchestrator import DAG, task\nimport time\n" + source)
    assert harness.parse().errors == 0
    run = harness.store.trigger_run(dag_id, harness.clock.now())
    harness.tick()
    return run.run_id


MANY = """
with DAG("many", schedule=None) as dag:
    for i in range(16):
        task(task_id=f"t{i}")(lambda ctx: None)
"""


@pytest.mark.parametrize("prefetch", [0, 2])
def test_short_tries_are_claimed_ahead_up_to_worker_prefetch_and_each_runs_once(
    harness, write_dag, settings, store, clock, monkeypatch, prefetch
):
    run_id = _start(harness, write_dag, MANY, "many")
    worker = Worker(
        store, clock, replace(settings, worker_concurrency=2, worker_prefetch=prefetch),
        worker_id="w-prefetch",
    )  # fmt: skip
    seen: list[int] = []
    real = store.finish_and_claim

    def counting(*args, **kwargs):  # the held claims, each round
        out = real(*args, **kwargs)
        seen.append(_running(store))
        return out

    monkeypatch.setattr(store, "finish_and_claim", counting)
    try:
        worker.run_until_idle()
    finally:
        worker.close()
    assert max(seen) <= 2 + prefetch
    if prefetch:
        assert max(seen) > 2, seen  # claimed ahead of the two processes
    for i in range(16):
        assert store.task_instance(run_id, f"t{i}").state == "success"
        assert _tries(store, run_id, f"t{i}") == [(1, "success")]


CHAIN = """
with DAG("ahead", schedule=None) as dag:
    @task
    def quick(ctx):
        return 1

    @task(priority_weight=10)
    def slow(ctx):
        time.sleep(3)

    @task
    def other(ctx):
        return 2

    quick >> [slow, other]
"""


def _worker(store, clock, settings) -> Worker:
    one = replace(settings, worker_concurrency=1, worker_prefetch=1)
    return Worker(store, clock, one, worker_id="w-ahead")


def _until(worker, clock, done, limit: float = 20.0) -> None:
    end = time.monotonic() + limit
    while not done():
        assert time.monotonic() < end, "timed out"
        worker.tick(clock.now(), wait_seconds=0.05)


def test_a_claim_made_ahead_that_waits_too_long_is_given_back_unchanged(
    harness, write_dag, settings, store, clock, monkeypatch
):
    monkeypatch.setattr(worker_module, "BACKLOG_SECONDS", 0.3)
    run_id = _start(harness, write_dag, CHAIN, "ahead")
    worker = _worker(store, clock, settings)
    try:
        # quick is short: its round claims slow (started) and other (ahead, waiting)
        _until(worker, clock, lambda: store.task_instance(run_id, "other").state == "running")
        assert store.task_instance(run_id, "slow").state == "running"
        # slow holds the only process: other is given back, as it was before its claim
        _until(worker, clock, lambda: store.task_instance(run_id, "other").state == "queued")
        other = store.task_instance(run_id, "other")
        assert (other.try_number, other.owner, other.lost_tries) == (0, None, 0)
        assert _tries(store, run_id, "other") == []
        assert store.task_instance(run_id, "slow").state == "running"
        # and not claimed again while slow runs (the tries are long now)
        for _ in range(10):
            worker.tick(clock.now(), wait_seconds=0.05)
        assert store.task_instance(run_id, "other").state == "queued"
        worker.run_until_idle()
    finally:
        worker.close()
    assert _tries(store, run_id, "other") == [(1, "success")]
    assert _tries(store, run_id, "slow") == [(1, "success")]


def test_a_draining_worker_gives_back_what_it_claimed_ahead(
    harness, write_dag, settings, store, clock
):
    run_id = _start(harness, write_dag, CHAIN, "ahead")
    worker = _worker(store, clock, settings)
    try:
        _until(worker, clock, lambda: store.task_instance(run_id, "other").state == "running")
        worker.drain(timeout=10)  # slow finishes; other was never started
    finally:
        worker.close()
    assert store.task_instance(run_id, "slow").state == "success"
    other = store.task_instance(run_id, "other")
    assert (other.state, other.try_number, other.lost_tries) == ("queued", 0, 0)
    assert _tries(store, run_id, "other") == []
    # another worker takes it as a first try
    (claim,) = store.claim("w-next", clock.now(), LEASE, limit=5)
    assert (claim.task_id, claim.try_number) == ("other", 1)


SENSOR = """
with DAG("pokes", schedule=None) as dag:
    task.sensor(task_id="wait", poke_interval=30)(lambda ctx: False)
    task(task_id="plain")(lambda ctx: None)
"""


def test_unclaim_restores_fresh_claims_and_pokes_and_leaves_lost_leases_alone(
    harness, write_dag, store, clock
):
    run_id = _start(harness, write_dag, SENSOR, "pokes")
    first = clock.now() - timedelta(minutes=5)
    with store.write() as conn:  # the sensor between two pokes: its try rescheduled
        conn.execute(
            update(ti)
            .where(ti.c.run_id == run_id, ti.c.task_id == "wait")
            .values(state="up_for_reschedule", try_number=1, poke_count=3,
                    first_poke_at=first, ready_at=clock.now())
        )  # fmt: skip
        ti_id = conn.execute(
            select(ti.c.id).where(ti.c.run_id == run_id, ti.c.task_id == "wait")
        ).scalar_one()
        conn.execute(
            m.task_tries.insert().values(
                ti_id=ti_id, dag_id="pokes", run_id=run_id, task_id="wait", try_number=1,
                worker="earlier", state="up_for_reschedule", start_date=first,
            )
        )  # fmt: skip
    claims = {c.task_id: c for c in store.claim("w", clock.now(), LEASE, limit=5)}
    assert set(claims) == {"wait", "plain"}
    assert _tries(store, run_id, "wait") == [(1, "running")]
    # a third claim, of another owner, whose lease this worker lost: left alone
    stale = replace(claims["plain"], owner="someone-else")
    assert store.unclaim([claims["wait"], stale], clock.now()) == 1
    wait = store.task_instance(run_id, "wait")
    assert (wait.state, wait.try_number, wait.poke_count, wait.owner) == (
        "up_for_reschedule", 1, 3, None,
    )  # fmt: skip
    assert wait.first_poke_at == first
    assert _tries(store, run_id, "wait") == [(1, "up_for_reschedule")]
    assert store.task_instance(run_id, "plain").state == "running"
    assert store.unclaim([claims["plain"]], clock.now()) == 1
    plain = store.task_instance(run_id, "plain")
    assert (plain.state, plain.try_number, plain.owner) == ("queued", 0, None)
    assert _tries(store, run_id, "plain") == []
    # claimed again, both are what they were: the next poke of try 1, a first try
    again = {c.task_id: c for c in store.claim("w2", clock.now(), LEASE, limit=5)}
    assert (again["wait"].try_number, again["wait"].poke_count) == (1, 3)
    assert again["plain"].try_number == 1


def test_claims_made_ahead_of_short_tries_are_started_not_given_back_however_long_they_wait(
    harness, write_dag, settings, store, clock, monkeypatch
):
    # a wait that is not a long try (here: every wait counts as long, BACKLOG_SECONDS 0;
    # in a cluster: this worker's round stuck on a lock held by a frozen peer) must not
    # churn the claims back and forth: the next free process starts them
    monkeypatch.setattr(worker_module, "BACKLOG_SECONDS", 0.0)
    run_id = _start(harness, write_dag, MANY, "many")
    worker = Worker(
        store, clock, replace(settings, worker_concurrency=2, worker_prefetch=2),
        worker_id="w-short",
    )  # fmt: skip
    given: list[int] = []
    real = store.unclaim
    monkeypatch.setattr(
        store, "unclaim", lambda claims, now: given.append(len(claims)) or real(claims, now)
    )
    try:
        worker.run_until_idle()
    finally:
        worker.close()
    assert given == []
    for i in range(16):
        assert _tries(store, run_id, f"t{i}") == [(1, "success")]


FENCED = """
import pathlib
with DAG("fenced", schedule=None, params={"mark": ""}) as dag:
    @task
    def quick(ctx):
        return 1

    @task(priority_weight=10)
    def slow(ctx):
        time.sleep(2.5)

    @task
    def other(ctx):
        pathlib.Path(ctx.params["mark"]).write_text("ran")

    quick >> [slow, other]
"""


def test_a_claim_made_ahead_whose_lease_cannot_be_confirmed_is_never_started(
    harness, write_dag, settings, store, clock, monkeypatch, tmp_path
):
    # the database becomes unreachable while slow runs: slow is stopped before its lease
    # can expire (_self_fence), and other, claimed ahead in the same round, whose lease
    # may have expired by then too (another worker may run it), is not started
    mark = tmp_path / "other-ran"
    write_dag("fenced.py", "from orchestrator import DAG, task\nimport time\n" + FENCED)
    assert harness.parse().errors == 0
    run = store.trigger_run("fenced", clock.now(), conf={"mark": str(mark)})
    harness.tick()
    short_lease = replace(
        settings, worker_concurrency=1, worker_prefetch=1, lease_seconds=2.0,
        heartbeat_seconds=0.5,
    )  # fmt: skip
    worker = Worker(store, clock, short_lease, worker_id="w-fenced")
    try:
        _until(worker, clock, lambda: store.task_instance(run.run_id, "other").state == "running")

        def unreachable(*args, **kwargs):
            raise ConnectionError("database unreachable")

        for name in ("heartbeat", "unclaim", "claim", "finish_and_claim", "finish_successes",
                     "finish_failure", "finish_round"):  # fmt: skip
            monkeypatch.setattr(store, name, unreachable)
        end = time.monotonic() + 4
        while time.monotonic() < end:
            try:  # as run_forever does: a failed round is retried
                worker.tick(clock.now(), wait_seconds=0.05)
            except ConnectionError:
                time.sleep(0.05)
        assert worker.running == 0  # slow was stopped (its lease could not be confirmed)
    finally:
        worker.close()
    assert not mark.exists()  # never started, here or anywhere
