"""priority_weight, max_active_tasks, max_active_tis_per_dag and depends_on_past on
both databases: what a claim takes, under concurrency too, and what the explainer says
(issue 14 item 6)."""

from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import update

from orchestrator.scheduling.explain import explain_task
from orchestrator.store import Store
from orchestrator.store.core import models as m

LEASE = timedelta(seconds=60)
STALE = timedelta(seconds=30)


def _parse(harness, write_dag, source: str) -> None:
    write_dag("controls.py", "from orchestrator import DAG, task\n" + source)
    harness.parse()


def _runs(harness, dag_id: str, n: int) -> list:
    start = harness.clock.now()
    runs = [
        harness.store.trigger_run(
            dag_id, harness.clock.now(), logical_date=start + timedelta(hours=i)
        )
        for i in range(n)
    ]
    harness.tick()  # start the runs: their root tasks are queued
    return runs


def _why(store: Store, run_id: str, task_id: str, now) -> list[str]:
    facts = store.task_facts(run_id, task_id, now, worker_stale_after=STALE)
    return [r.code for r in explain_task(facts)]


def _explain(store: Store, run_id: str, task_id: str, now) -> list[str]:
    facts = store.task_facts(run_id, task_id, now, worker_stale_after=STALE)
    return [r.message for r in explain_task(facts)]


PRIORITIES = """
with DAG("prio", schedule=None) as dag:
    for name, weight in [("low", 1), ("mid", 5), ("high", 10), ("neg", -3)]:
        task(task_id=name, priority_weight=weight)(lambda ctx: None)
"""


def test_claims_take_higher_priority_first_then_the_oldest_ready(harness, write_dag, store, clock):
    _parse(harness, write_dag, PRIORITIES)
    first, second = _runs(harness, "prio", 2)
    order = []
    while claims := store.claim("w", clock.now(), LEASE, limit=1):
        order.append((claims[0].task_id, claims[0].run_id))
    assert [t for t, _ in order] == ["high", "high", "mid", "mid", "low", "low", "neg", "neg"]
    # within one priority the oldest ready first (the runs were started together: by id)
    assert [r for t, r in order if t == "mid"] == [first.run_id, second.run_id]


MANY = """
with DAG("many", schedule=None) as dag:
    for i in range(6):
        task(task_id=f"high{i}", priority_weight=10)(lambda ctx: None)
        task(task_id=f"low{i}")(lambda ctx: None)
"""


def test_two_claimers_at_once_take_the_high_priority_tasks_first_and_never_twice(
    harness, write_dag, store, settings, clock
):
    _parse(harness, write_dag, MANY)
    _runs(harness, "many", 1)
    other = Store(settings.database_url)
    got: dict[str, list[str]] = {}
    barrier = threading.Barrier(2)

    def claim(name: str, s: Store) -> None:
        barrier.wait()
        got[name] = [c.task_id for c in s.claim(name, clock.now(), LEASE, limit=3)]

    threads = [threading.Thread(target=claim, args=(n, s)) for n, s in (("a", store), ("b", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other.dispose()
    taken = got["a"] + got["b"]
    assert len(taken) == len(set(taken)) == 6
    assert sorted(taken) == [f"high{i}" for i in range(6)]


LIMITS = """
with DAG("limits", schedule=None, max_active_tasks=2) as dag:
    for name in ("a", "b", "c"):
        task(task_id=name)(lambda ctx: None)

with DAG("per_task", schedule=None) as per_task:
    task(task_id="one_at_a_time", max_active_tis_per_dag=1)(lambda ctx: None)
    task(task_id="free")(lambda ctx: None)
"""


def test_max_active_tasks_counts_the_dags_running_instances(harness, write_dag, store, clock):
    _parse(harness, write_dag, LIMITS)
    [run] = _runs(harness, "limits", 1)
    claims = store.claim("w", clock.now(), LEASE, limit=10)
    assert sorted(c.task_id for c in claims) == ["a", "b"]
    assert store.claim("w", clock.now(), LEASE, limit=10) == []
    assert "max_active_tasks" in _why(store, run.run_id, "c", clock.now())
    assert any("its limit is 2" in m for m in _explain(store, run.run_id, "c", clock.now()))
    store.finish_success(claims[0], None, clock.now())
    assert [c.task_id for c in store.claim("w", clock.now(), LEASE, limit=10)] == ["c"]


def test_max_active_tis_per_dag_counts_across_runs(harness, write_dag, store, clock):
    _parse(harness, write_dag, LIMITS)
    runs = _runs(harness, "per_task", 3)
    claims = store.claim("w", clock.now(), LEASE, limit=10)
    assert sorted(c.task_id for c in claims) == ["free", "free", "free", "one_at_a_time"]
    held = next(c for c in claims if c.task_id == "one_at_a_time")
    waiting = [r.run_id for r in runs if r.run_id != held.run_id]
    for run_id in waiting:
        assert _why(store, run_id, "one_at_a_time", clock.now())[0] == "max_active_tis_per_dag"
    store.finish_success(held, None, clock.now())
    [nxt] = store.claim("w", clock.now(), LEASE, limit=10)
    assert nxt.task_id == "one_at_a_time" and nxt.run_id == waiting[0]  # the oldest ready


def test_concurrent_claimers_never_exceed_max_active_tis_per_dag(
    harness, write_dag, store, settings, clock
):
    _parse(harness, write_dag, LIMITS)
    _runs(harness, "per_task", 5)
    other = Store(settings.database_url)
    got: list[str] = []
    barrier = threading.Barrier(2)

    def claim(name: str, s: Store) -> None:
        barrier.wait()
        got.extend(c.task_id for c in s.claim(name, clock.now(), LEASE, limit=10))

    threads = [threading.Thread(target=claim, args=(n, s)) for n, s in (("a", store), ("b", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other.dispose()
    assert got.count("one_at_a_time") == 1
    assert got.count("free") == 5


PAST = """
with DAG("past", schedule=None) as dag:
    @task(depends_on_past=True, retries=0)
    def t(ctx):
        return None
"""


def test_depends_on_past_waits_for_the_previous_run_by_logical_date(
    harness, write_dag, store, clock
):
    _parse(harness, write_dag, PAST)
    first, second, third = _runs(harness, "past", 3)
    [claim] = store.claim("w", clock.now(), LEASE, limit=10)
    assert claim.run_id == first.run_id  # the first run does not wait
    assert _why(store, second.run_id, "t", clock.now())[0] == "depends_on_past"
    message = _explain(store, second.run_id, "t", clock.now())[0]
    assert first.run_id in message and "succeed or be skipped" in message
    store.finish_success(claim, None, clock.now())
    [claim] = store.claim("w", clock.now(), LEASE, limit=10)
    assert claim.run_id == second.run_id
    # a failure in the previous run keeps the next one waiting
    store.finish_failure(claim, "boom", 1, clock.now())
    assert store.claim("w", clock.now(), LEASE, limit=10) == []
    assert _why(store, third.run_id, "t", clock.now())[0] == "depends_on_past"


def test_depends_on_past_accepts_a_skipped_previous_instance(harness, write_dag, store, clock):
    _parse(harness, write_dag, PAST)
    first, second = _runs(harness, "past", 2)
    [claim] = store.claim("w", clock.now(), LEASE, limit=10)
    store.finish_skip(claim, "nothing to do", None, clock.now())
    [claim] = store.claim("w", clock.now(), LEASE, limit=10)
    assert claim.run_id == second.run_id


def test_a_dag_without_controls_is_not_gated(harness, write_dag, store, clock):
    _parse(harness, write_dag, PRIORITIES)
    [run] = _runs(harness, "prio", 1)
    assert _why(store, run.run_id, "low", clock.now()) == ["no_live_worker"]


TIMEOUT = """
with DAG("timeout", schedule=None, dagrun_timeout=60) as dag:
    first = task(task_id="first")(lambda ctx: None)
    second = task(task_id="second")(lambda ctx: None)
    first >> second

with DAG("no_timeout", schedule=None) as other:
    task(task_id="first")(lambda ctx: None)
"""


def test_dagrun_timeout_fails_the_run_and_fences_out_its_late_reports(
    harness, write_dag, store, clock
):
    _parse(harness, write_dag, TIMEOUT)
    [run] = _runs(harness, "timeout", 1)
    [calm] = _runs(harness, "no_timeout", 1)
    long = timedelta(minutes=10)  # the lease outlives the run's deadline
    claims = {c.run_id: c for c in store.claim("w", clock.now(), long, limit=10)}
    assert set(claims) == {run.run_id, calm.run_id}
    clock.advance(timedelta(seconds=59))
    harness.tick()
    assert store.get_run(run.run_id).state == "running"  # not yet
    clock.advance(timedelta(seconds=2))
    harness.tick()
    assert store.get_run(run.run_id).state == "failed"
    assert store.get_run(calm.run_id).state == "running"  # no timeout declared
    states = {t.task_id: t.state for t in store.task_instances(run.run_id)}
    assert states == {"first": "failed", "second": "cancelled"}
    assert "dagrun_timeout" in (store.task_instance(run.run_id, "first").error or "")
    assert [t.state for t in store.tries(run.run_id, "first")] == ["failed"]
    # the running try lost its lease: its heartbeat and its late report are refused
    late = claims[run.run_id]
    held = store.heartbeat("w", [(late.ti_id, late.try_number)], clock.now(), long)
    assert held == set()
    assert store.finish_success(late, '"late"', clock.now()) is False
    assert store.task_instance(run.run_id, "first").state == "failed"
    kinds = [e.kind for e in store.events_after(0) if e.run_id == run.run_id]
    assert {"run_timed_out", "run_failed", "stale_write_rejected"} <= set(kinds)
    # ticking again changes nothing
    harness.tick()
    assert store.get_run(run.run_id).state == "failed"


def test_a_cleared_timed_out_run_is_timed_again_from_the_clear(harness, write_dag, store, clock):
    _parse(harness, write_dag, TIMEOUT)
    [run] = _runs(harness, "timeout", 1)
    clock.advance(timedelta(seconds=61))
    harness.tick()
    assert store.get_run(run.run_id).state == "failed"
    store.clear_task(run.run_id, "first", clock.now(), downstream=True)
    harness.tick()
    assert store.get_run(run.run_id).state == "running"  # a fresh deadline
    clock.advance(timedelta(seconds=61))
    harness.tick()
    assert store.get_run(run.run_id).state == "failed"


SLEEPER = """
with DAG("sleeper", schedule=None, dagrun_timeout=5) as dag:
    sleep = dag.shell("sleep", "echo started; sleep 60; echo finished")
    after = dag.shell("after", "true")
    sleep >> after
"""


def test_a_timed_out_runs_running_try_is_killed_by_its_worker(harness, write_dag, store, clock):
    _parse(harness, write_dag, SLEEPER)
    [run] = _runs(harness, "sleeper", 1)
    worker = harness.worker
    assert worker.tick(clock.now()) == 1  # the try starts in a real task process
    [slot] = worker._busy
    clock.advance(timedelta(seconds=6))
    harness.tick()  # past the deadline: the run fails
    assert store.get_run(run.run_id).state == "failed"
    worker.heartbeat(clock.now())  # the lease is gone: the worker stops the try
    assert worker.running == 0
    slot.process.join(10)
    assert not slot.process.is_alive()  # the task process, and the sleep in it, ended
    worker.run_until_idle(timeout=10)
    states = {t.task_id: t.state for t in store.task_instances(run.run_id)}
    assert states == {"sleep": "failed", "after": "cancelled"}


def test_tasks_why_names_the_limit_on_the_command_line(
    harness, write_dag, store, clock, settings, monkeypatch, capsys
):
    import json

    from orchestrator.cli import main

    _parse(harness, write_dag, PAST)
    first, second = _runs(harness, "past", 2)
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    capsys.readouterr()
    assert main(["tasks", "why", second.run_id, "t", "--json"]) == 0
    out = capsys.readouterr().out
    body = json.loads(out)
    assert body["state"] == "queued"  # queued, and the claim leaves it
    [reason] = [r for r in body["reasons"] if r["code"] == "depends_on_past"]
    assert reason["facts"] == {"past_run_id": first.run_id, "past_state": "queued"}


def test_the_claim_order_holds_across_queued_retries_and_reschedules(
    harness, write_dag, store, clock
):
    # the claim reads each claimable state on its own (SQLite): the best of all of them
    # must still come first, whichever state holds it
    _parse(harness, write_dag, PRIORITIES)
    (run,) = _runs(harness, "prio", 1)
    ti = m.task_instances
    now = clock.now()
    with store.write() as conn:
        for task_id, state, ready in [
            ("low", "queued", now - timedelta(seconds=5)),
            ("mid", "up_for_retry", now - timedelta(seconds=1)),
            ("high", "up_for_reschedule", now - timedelta(seconds=2)),
            ("neg", "up_for_retry", now + timedelta(minutes=5)),  # not due yet
        ]:
            conn.execute(
                update(ti)
                .where(ti.c.run_id == run.run_id, ti.c.task_id == task_id)
                .values(state=state, ready_at=ready)
            )
    first = store.claim("w", now, LEASE, limit=2)
    assert sorted(c.task_id for c in first) == ["high", "mid"]
    assert [c.task_id for c in store.claim("w", now, LEASE, limit=5)] == ["low"]
    assert store.claim("w", now + timedelta(minutes=6), LEASE, limit=5)[0].task_id == "neg"


WAITING = """
from datetime import timedelta

with DAG("waiting", schedule=None, dagrun_timeout=60) as dag:
    task.sensor(task_id="wait", poke_interval=timedelta(seconds=30))(lambda ctx: False)
"""


def test_a_timed_out_run_closes_the_try_of_a_sensor_between_pokes(harness, write_dag, store, clock):
    _parse(harness, write_dag, WAITING)
    [run] = _runs(harness, "waiting", 1)
    harness.worker.run_until_idle()  # the first poke: unmet, the try waits in the store
    assert store.task_instance(run.run_id, "wait").state == "up_for_reschedule"
    assert [t.state for t in store.tries(run.run_id, "wait")] == ["up_for_reschedule"]
    clock.advance(timedelta(seconds=61))
    harness.tick()
    assert store.get_run(run.run_id).state == "failed"
    assert store.task_instance(run.run_id, "wait").state == "cancelled"
    [try_] = store.tries(run.run_id, "wait")
    assert try_.state == "cancelled" and "dagrun_timeout" in (try_.error or "")
    assert try_.end_date == clock.now()
