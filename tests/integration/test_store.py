"""Store transitions on both backends: fencing, heartbeats, exclusive claims, reaping.

These drive the store directly (no task processes) on a fake clock, so every lease
expiry is a clock move, never a sleep.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.runs.run_rows import insert_run

LEASE = timedelta(seconds=30)


@pytest.fixture
def other_store(settings):
    """A second Store with its own engine: another process, as far as the DB can tell."""
    s = Store(settings.database_url)
    yield s
    s.dispose()


def _one_task_run(harness, write_dag, *, retries: int) -> str:
    write_dag(
        "single.py",
        f"""
        from orchestrator import DAG, task

        with DAG("single", schedule=None, retry_delay=5) as dag:
            @task(retries={retries})
            def only(ctx):
                return 1
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("single", harness.clock.now())
    harness.tick()  # start the run, release the task
    assert harness.store.task_instance(run.run_id, "only").state == "queued"
    return run.run_id


def _events(store: Store, kind: str) -> list:
    return store.events(kind=kind, limit=1000)


# -- fencing ------------------------------------------------------------------------------
def test_stale_worker_completion_is_rejected_and_changes_nothing(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=2)
    [a] = store.claim("worker-A", clock.now(), LEASE, limit=5)
    assert a.try_number == 1 and a.owner == "worker-A"

    clock.advance(LEASE + timedelta(seconds=1))
    reaped = harness.tick().reaped
    assert reaped == [(run_id, "only", 1, "queued")]  # lost, queued again at once
    [b] = store.claim("worker-B", clock.now(), LEASE, limit=5)
    assert (b.ti_id, b.try_number, b.owner) == (a.ti_id, 2, "worker-B")

    before = store.task_instance(run_id, "only")
    assert store.finish_success(a, '"from A"', clock.now()) is False
    assert store.finish_failure(a, "A failed late", 1, clock.now()) is None
    after = store.task_instance(run_id, "only")
    assert after == before
    assert after.state == "running" and after.owner == "worker-B" and after.try_number == 2
    stale = _events(store, "stale_write_rejected")
    assert len(stale) == 2
    assert all(e.try_number == 1 and "worker-A" in e.message for e in stale)

    assert store.finish_success(b, '"from B"', clock.now()) is True
    assert store.results(run_id, ["only"]) == {"only": '"from B"'}
    assert [(t.try_number, t.worker, t.state) for t in store.tries(run_id, "only")] == [
        (1, "worker-A", "lost"),
        (2, "worker-B", "success"),
    ]
    # B's own second report is fenced too: the attempt is no longer running.
    assert store.finish_failure(b, "again", 1, clock.now()) is None
    assert store.task_instance(run_id, "only").state == "success"


def test_heartbeat_extends_only_leases_still_held(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=1)
    [a] = store.claim("worker-A", clock.now(), LEASE, limit=1)
    held = {(a.ti_id, a.try_number)}

    clock.advance(seconds=20)
    assert store.heartbeat("worker-A", held, clock.now(), LEASE) == held
    assert store.task_instance(run_id, "only").lease_expires_at == clock.now() + LEASE
    # another owner, or a try the worker does not hold, keeps nothing
    extended = clock.now() + LEASE
    clock.advance(seconds=1)
    assert store.heartbeat("worker-B", held, clock.now(), LEASE) == set()
    assert store.heartbeat("worker-A", {(a.ti_id, 7)}, clock.now(), LEASE) == set()
    assert store.task_instance(run_id, "only").lease_expires_at == extended
    assert store.heartbeat("worker-A", set(), clock.now(), LEASE) == set()

    # the extension held the lease past the original expiry: nothing to reap
    clock.advance(seconds=24)
    assert harness.tick().reaped == []
    assert store.task_instance(run_id, "only").state == "running"

    clock.advance(LEASE + timedelta(seconds=1))
    assert store.heartbeat("worker-A", held, clock.now(), LEASE) == set()  # expired
    harness.tick()
    assert store.heartbeat("worker-A", held, clock.now(), LEASE) == set()  # reaped
    assert store.task_instance(run_id, "only").state == "queued"  # lost, queued again


# -- lease expiry -------------------------------------------------------------------------
@pytest.mark.parametrize("retries", [0, 1])
def test_expired_lease_is_reaped_as_a_lost_try_that_spends_no_retry(harness, write_dag, retries):
    """Issue 12 item 6: with retries=0 a lost try used to fail the task and its run."""
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=retries)
    [a] = store.claim("worker-A", clock.now(), LEASE, limit=1)

    clock.advance(LEASE)  # exactly at expiry: still held
    assert harness.tick().reaped == []
    clock.advance(seconds=1)
    result = harness.tick()
    assert result.reaped == [(run_id, "only", 1, "queued")]
    ti = store.task_instance(run_id, "only")
    assert (ti.state, ti.try_number, ti.max_tries, ti.lost_tries) == (
        "queued",
        1,
        retries + 2,  # one more try for the lost one: the retries are untouched
        1,
    )
    assert ti.owner is None and ti.ready_at == clock.now()  # at once, no backoff
    assert "lease expired" in ti.error and "worker-A" in ti.error
    [t] = store.tries(run_id, "only")
    assert (t.state, t.lost_reason, t.end_date) == ("lost", "lease_expired", clock.now())
    assert [e.task_id for e in _events(store, "task_lost")] == ["only"]
    assert _events(store, "task_dead_lettered") == _events(store, "task_retry") == []
    assert store.get_run(run_id).state == "running"
    assert _events(store, "stale_write_rejected") == []
    assert harness.tick().reaped == []  # reaping is done once


def test_two_reapers_racing_close_each_attempt_once(harness, write_dag, other_store):
    store, clock = harness.store, harness.clock
    write_dag(
        "many.py",
        """
        from orchestrator import DAG, task

        with DAG("many", schedule=None) as dag:
            for i in range(40):
                task(task_id=f"t{i}", retries=1)(lambda: None)
        """,
    )
    harness.parse()
    run = store.trigger_run("many", clock.now())
    harness.tick()
    assert len(store.claim("worker-A", clock.now(), LEASE, limit=100)) == 40
    clock.advance(LEASE + timedelta(seconds=1))
    now = clock.now()
    results: list[list] = []
    barrier = threading.Barrier(4)

    def reap(s: Store) -> None:
        barrier.wait()
        results.append(s.reap_expired(now))

    threads = [threading.Thread(target=reap, args=(s,)) for s in (store, other_store) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reaped = [r for batch in results for r in batch]
    assert sorted(r[1] for r in reaped) == sorted(f"t{i}" for i in range(40))
    assert len(_events(store, "task_lost")) == 40
    assert _events(store, "stale_write_rejected") == []
    for ti in store.task_instances(run.run_id):
        assert (ti.state, ti.lost_tries, ti.max_tries) == ("queued", 1, 3)
        assert [t.state for t in store.tries(run.run_id, ti.task_id)] == ["lost"]


# -- claims -------------------------------------------------------------------------------
def test_concurrent_claims_from_two_stores_never_hand_out_an_attempt_twice(
    harness, write_dag, other_store
):
    store, clock = harness.store, harness.clock
    write_dag(
        "wide.py",
        """
        from orchestrator import DAG, task

        with DAG("wide", schedule=None, max_active_runs=2) as dag:
            for i in range(300):
                task(task_id=f"t{i:03d}")(lambda: None)
        """,
    )
    harness.parse()
    runs = [
        store.trigger_run("wide", clock.now()),
        store.trigger_run("wide", clock.now(), logical_date=clock.now() + timedelta(seconds=1)),
    ]
    harness.tick()
    assert sum(len(store.task_instances(r.run_id)) for r in runs) == 600
    now = clock.now()
    claimed: list[tuple[int, int, str]] = []
    over_limit: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(6)

    def claimer(s: Store, name: str, limit: int) -> None:
        # in rounds: all six claim at once each round (one fast thread could otherwise
        # take everything before the others start), until a round claims nothing
        try:
            while True:
                barrier.wait()
                before = len(claimed)
                barrier.wait()
                got = s.claim(name, now, LEASE, limit=limit)
                if len(got) > limit:
                    over_limit.append(len(got))
                with lock:
                    claimed.extend((c.ti_id, c.try_number, name) for c in got)
                barrier.wait()
                if len(claimed) == before:
                    return
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=claimer, args=(s, f"w{i}", 1 + i * 2))
        for i, s in enumerate([store, other_store] * 3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert over_limit == []
    pairs = Counter((ti_id, try_number) for ti_id, try_number, _ in claimed)
    assert len(claimed) == 600
    assert max(pairs.values()) == 1
    assert len({name for *_, name in claimed}) > 1  # they really did compete
    owners = {}
    for r in runs:
        for ti in store.task_instances(r.run_id):
            assert ti.state == "running" and ti.try_number == 1
            owners[ti.id] = ti.owner
    assert owners == {ti_id: name for ti_id, _, name in claimed}
    with store.read() as conn:
        n_tries = conn.execute(select(m.task_tries.c.id)).all()
    assert len(n_tries) == 600


def test_claim_respects_limit_queues_and_ready_at(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag(
        "queues.py",
        """
        from orchestrator import DAG, task

        with DAG("queues", schedule=None) as dag:
            for i in range(5):
                task(task_id=f"gpu{i}", queue="gpu")(lambda: None)
                task(task_id=f"cpu{i}")(lambda: None)
        """,
    )
    harness.parse()
    run = store.trigger_run("queues", clock.now())
    harness.tick()
    now = clock.now()
    assert store.claim("w", now, LEASE, limit=0) == []
    assert store.claim("w", now - timedelta(seconds=1), LEASE, limit=10) == []  # not ready yet
    first = store.claim("w", now, LEASE, limit=3, queues=("gpu",))
    assert [c.task_id for c in first] == ["gpu0", "gpu1", "gpu2"]
    rest = store.claim("w", now, LEASE, limit=10, queues=("gpu", "other"))
    assert [c.task_id for c in rest] == ["gpu3", "gpu4"]
    assert store.claim("w", now, LEASE, limit=10, queues=("gpu",)) == []
    default = store.claim("w", now, LEASE, limit=10)
    assert sorted(c.task_id for c in default) == [f"cpu{i}" for i in range(5)]
    c = default[0]
    assert (c.run_id, c.try_number, c.lease_expires_at) == (run.run_id, 1, now + LEASE)
    assert c.log_path == f"queues/{run.run_id}/{c.task_id}/1.log"


# -- runs ---------------------------------------------------------------------------------
def test_one_run_per_logical_date_is_enforced_by_the_database(harness, write_dag):
    store, clock = harness.store, harness.clock
    _one_task_run(harness, write_dag, retries=0)
    dag = store.get_dag("single")
    spec = store.spec("single", dag.version_hash)
    when = clock.now() + timedelta(hours=1)
    with store.write() as conn:
        kw = dict(logical_date=when, interval=(when, when), conf={}, now=clock.now())
        assert insert_run(conn, spec, dag.version_hash, run_type="scheduled", **kw) is not None
        # a different run_id (another run type) for the same fire time is still refused
        assert insert_run(conn, spec, dag.version_hash, run_type="backfill", **kw) is None
    with pytest.raises(IntegrityError), store.write() as conn:
        conn.execute(
            insert(m.dag_runs).values(
                run_id="single__other__x",
                dag_id="single",
                version_hash=dag.version_hash,
                run_type="backfill",
                logical_date=when,
                data_interval_start=when,
                data_interval_end=when,
                state="queued",
                conf="{}",
                created_at=clock.now(),
            )
        )
    # a manual run for that fire time is another run: it neither blocks nor displaces
    with store.write() as conn:
        assert insert_run(conn, spec, dag.version_hash, run_type="manual", **kw) is not None
    assert sorted(r.run_type for r in store.list_runs("single") if r.logical_date == when) == [
        "manual",
        "scheduled",
    ]


def test_a_worker_and_schedulers_finishing_a_run_concurrently_finish_it_once(
    harness, write_dag, other_store
):
    # the worker's success of the last task finishes the run in its own transaction;
    # schedulers' finish_runs race it: whoever comes second must find nothing to do
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=0)
    [c] = store.claim("w", clock.now(), LEASE, limit=1)
    results: list = []
    barrier = threading.Barrier(4)

    def finish_task() -> None:
        barrier.wait()
        assert store.finish_success(c, None, clock.now())

    def finish_runs(s: Store) -> None:
        barrier.wait()
        results.append(s.finish_runs(clock.now()))

    threads = [threading.Thread(target=finish_task)] + [
        threading.Thread(target=finish_runs, args=(s,)) for s in (other_store, store, other_store)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r for batch in results for r in batch) in ([], [(run_id, "success")])
    assert store.get_run(run_id).state == "success"
    assert len(_events(store, "run_success")) == 1
    assert store.finish_runs(clock.now()) == []


def test_cleared_task_reruns_with_a_new_try_and_reopens_its_run(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _one_task_run(harness, write_dag, retries=0)
    [c] = store.claim("w", clock.now(), LEASE, limit=1)
    assert store.finish_success(c, "1", clock.now())
    harness.tick()
    assert store.get_run(run_id).state == "success"

    assert store.clear_task(run_id, "only", clock.now()) == ["only"]
    assert store.get_run(run_id).state == "running"
    ti = store.task_instance(run_id, "only")
    assert (ti.state, ti.try_number, ti.max_tries) == ("scheduled", 1, 2)
    assert store.finish_runs(clock.now()) == []  # an unfinished task keeps the run open
    harness.tick()
    [again] = store.claim("w", clock.now(), LEASE, limit=1)
    assert again.try_number == 2
    assert store.finish_success(again, "2", clock.now())  # the last task: the run is done
    assert store.get_run(run_id).state == "success"
    assert store.finish_runs(clock.now()) == []
    assert len(store.events(kind="run_success", limit=10)) == 2
    assert [t.try_number for t in store.tries(run_id, "only")] == [1, 2]
