"""Batched finishing: a worker's round records many successes in one transaction.

``finish_successes`` fences each try on its own inside one batch, releases each
downstream task once after all of its run's successes are in, and
``finish_and_claim`` takes what those successes released in the same transaction,
with the upstream results the tries need.
"""

from __future__ import annotations

from datetime import timedelta

LEASE = timedelta(seconds=30)


def _wide(harness, write_dag, width: int, *, retries: int = 2) -> str:
    write_dag(
        "wide.py",
        f"""
        from orchestrator import DAG, task

        with DAG("wide", schedule=None, retry_delay=5, default_retries={retries}) as dag:
            start = task(task_id="start")(lambda: None)
            middle = [task(task_id=f"m{{i:03d}}")(lambda: None) for i in range({width})]
            end = task(task_id="end")(lambda: None)
            start >> middle
            middle >> end
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("wide", harness.clock.now())
    harness.tick()
    return run.run_id


def _state(store, run_id: str, task_id: str) -> str:
    return store.task_instance(run_id, task_id).state


def _finish_start(harness, run_id: str) -> None:
    store, clock = harness.store, harness.clock
    [start] = store.claim("w", clock.now(), LEASE, limit=1)
    assert start.task_id == "start"
    store.finish_success(start, '{"rows": 3}', clock.now())
    assert _state(store, run_id, "m000") == "queued"


def test_a_batch_records_each_held_try_and_fences_out_a_stale_one(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _wide(harness, write_dag, 3)
    _finish_start(harness, run_id)
    claims = store.claim("w", clock.now(), LEASE, limit=3)
    assert sorted(c.task_id for c in claims) == ["m000", "m001", "m002"]
    by_task = {c.task_id: c for c in claims}
    # m001's lease is lost: reaped, then taken again by another worker
    clock.advance(LEASE + timedelta(seconds=1))
    store.heartbeat("w", [(by_task[t].ti_id, by_task[t].try_number) for t in ("m000", "m002")],
                    clock.now() - timedelta(seconds=2), LEASE)  # fmt: skip
    assert [r[1] for r in harness.tick().reaped] == ["m001"]
    clock.advance(minutes=5)
    [again] = store.claim("other", clock.now(), LEASE, limit=1)
    assert (again.task_id, again.try_number) == ("m001", 2)

    done = store.finish_successes(
        [
            (by_task["m000"], '"zero"', clock.now()),
            (by_task["m001"], '"stale"', clock.now()),
            (by_task["m002"], '"two"', clock.now()),
        ]
    )
    assert [f.recorded for f in done] == [True, False, True]
    assert store.results(run_id, ["m000", "m001", "m002"]) == {"m000": '"zero"', "m002": '"two"'}
    m001 = store.task_instance(run_id, "m001")
    assert (m001.state, m001.owner, m001.try_number) == ("running", "other", 2)
    assert [(t.try_number, t.state) for t in store.tries(run_id, "m000")] == [(1, "success")]
    assert [(t.try_number, t.state) for t in store.tries(run_id, "m001")] == [
        (1, "lost"),
        (2, "running"),
    ]
    stale = store.events(kind="stale_write_rejected", limit=10)
    assert [(e.task_id, e.try_number) for e in stale] == [("m001", 1)]
    # end waits for m001, which the other worker still runs
    assert _state(store, run_id, "end") == "scheduled"
    assert store.finish_success(again, '"one"', clock.now()) is True
    assert _state(store, run_id, "end") == "queued"


def test_the_last_upstream_successes_in_one_batch_release_the_fan_in_once(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _wide(harness, write_dag, 4)
    _finish_start(harness, run_id)
    claims = store.claim("w", clock.now(), LEASE, limit=4)
    done = store.finish_successes([(c, None, clock.now()) for c in claims])
    assert all(f.recorded for f in done)
    assert sum(f.released for f in done) == 1  # end, counted once for the batch
    assert _state(store, run_id, "end") == "queued"


def test_a_large_fan_in_is_released_only_when_every_upstream_succeeded(harness, write_dag):
    # 70 upstream tasks: decided by the complement (the run's other tasks), not by name
    store, clock = harness.store, harness.clock
    run_id = _wide(harness, write_dag, 70)
    _finish_start(harness, run_id)
    claims = store.claim("w", clock.now(), LEASE, limit=70)
    assert len(claims) == 70
    first, last = claims[:60], claims[60:]
    done = store.finish_successes([(c, None, clock.now()) for c in first])
    assert not any(f.needs_scheduler for f in done)  # nothing failed: end just waits
    assert _state(store, run_id, "end") == "scheduled"
    done = store.finish_successes([(c, None, clock.now()) for c in last])
    assert sum(f.released for f in done) == 1
    assert _state(store, run_id, "end") == "queued"


def test_a_failed_upstream_leaves_the_fan_in_to_the_scheduler(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _wide(harness, write_dag, 70, retries=0)
    _finish_start(harness, run_id)
    claims = store.claim("w", clock.now(), LEASE, limit=70)
    assert store.finish_failure(claims[0], "boom", 1, clock.now()) == "failed"
    done = store.finish_successes([(c, None, clock.now()) for c in claims[1:]])
    assert any(f.needs_scheduler for f in done)
    assert _state(store, run_id, "end") == "scheduled"  # not released by the fast path
    harness.tick()
    assert _state(store, run_id, "end") == "upstream_failed"


def test_finish_and_claim_takes_what_the_successes_released(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _wide(harness, write_dag, 3)
    [start] = store.claim("w", clock.now(), LEASE, limit=1)
    done, claims = store.finish_and_claim(
        [(start, '{"rows": 3}', clock.now())], "w", clock.now(), LEASE, limit=2
    )
    assert [f.recorded for f in done] == [True]
    assert sum(f.released for f in done) == 3
    assert len(claims) == 2  # the limit holds; the third stays queued
    assert {c.task_id for c in claims} < {"m000", "m001", "m002"}
    assert all(c.owner == "w" and c.try_number == 1 for c in claims)
    assert all(c.upstream_results == {"start": '{"rows": 3}'} for c in claims)
    assert all(_state(store, run_id, c.task_id) == "running" for c in claims)
    assert sorted(t.state for t in store.task_instances(run_id)) == [
        "queued",
        "running",
        "running",
        "scheduled",
        "success",
    ]


def test_a_stale_success_is_not_recorded_by_finish_and_claim_either(harness, write_dag):
    store, clock = harness.store, harness.clock
    run_id = _wide(harness, write_dag, 1)
    [start] = store.claim("w", clock.now(), LEASE, limit=1)
    clock.advance(LEASE + timedelta(seconds=1))
    harness.tick()  # reaped: the try is lost, queued again at once
    done, claims = store.finish_and_claim(
        [(start, None, clock.now())], "w", clock.now(), LEASE, limit=4
    )
    assert [f.recorded for f in done] == [False]
    # the same owner takes the task again, as try 2: its stale try 1 is fenced out
    assert [(c.task_id, c.try_number) for c in claims] == [("start", 2)]
    assert _state(store, run_id, "start") == "running"
    assert _state(store, run_id, "m000") == "scheduled"  # never released


def test_a_claim_gets_results_recorded_now_and_before(harness, write_dag):
    store, clock = harness.store, harness.clock
    write_dag(
        "join.py",
        """
        from orchestrator import DAG, task

        with DAG("join", schedule=None) as dag:
            a = task(task_id="a")(lambda: None)
            b = task(task_id="b")(lambda: None)
            n = task(task_id="n")(lambda: None)
            c = task(task_id="c")(lambda: None)
            [a, b, n] >> c
        """,
    )
    harness.parse()
    run = store.trigger_run("join", clock.now())
    harness.tick()
    roots = {c.task_id: c for c in store.claim("w", clock.now(), LEASE, limit=3)}
    assert store.finish_success(roots["a"], '"A"', clock.now())  # an earlier round
    done, claims = store.finish_and_claim(
        [(roots["b"], '"B"', clock.now()), (roots["n"], None, clock.now())],
        "w",
        clock.now(),
        LEASE,
        limit=4,
    )
    assert all(f.recorded for f in done)
    [c] = claims
    assert (c.run_id, c.task_id) == (run.run_id, "c")
    assert c.upstream_results == {"a": '"A"', "b": '"B"'}  # a NULL result is left out
