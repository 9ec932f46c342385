"""Worker behaviour when things go wrong around it: shutdown, lost heartbeats, outages."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy.exc import OperationalError

from orchestrator.engine import wakeup
from orchestrator.engine.scheduler import Scheduler
from orchestrator.engine.worker import Worker
from orchestrator.store import Store

SLOW_DAG = """
import time
from orchestrator import DAG, task

with DAG("slow", schedule=None) as dag:
    @task(retries=0)
    def nap(ctx):
        if ctx.try_number == 1:
            time.sleep(30)
        return ctx.try_number
"""


def start_slow_run(harness, write_dag):
    write_dag("slow.py", SLOW_DAG)
    harness.parse()
    run = harness.store.trigger_run("slow", harness.clock.now())
    harness.tick()
    return run


def test_draining_worker_hands_back_what_it_cannot_finish(
    harness, write_dag, store, settings, clock
):
    run = start_slow_run(harness, write_dag)
    leaving = Worker(store, clock, settings, worker_id="leaving")
    assert leaving.tick(clock.now()) == 1  # claimed and started the 30 s nap
    leaving.drain(timeout=0.2)
    leaving.close()

    ti = store.task_instance(run.run_id, "nap")
    assert ti.state == "queued" and ti.owner is None
    [try1] = store.tries(run.run_id, "nap")
    assert (try1.state, try1.lost_reason, try1.worker) == ("lost", "handed_back", "leaving")
    assert (ti.lost_tries, ti.max_tries) == (1, 2)
    assert store.events(run_id=run.run_id, kind="task_lost")

    # another worker takes it at once, and the handed-back try cost no retry (retries=0)
    done = harness.run_until_finished(run.run_id)
    assert done.state == "success"
    assert [t.state for t in store.tries(run.run_id, "nap")] == ["lost", "success"]


def test_a_worker_that_cannot_heartbeat_stops_its_tries_before_the_lease_expires(
    harness, write_dag, store, settings, clock, monkeypatch
):
    run = start_slow_run(harness, write_dag)
    fast = settings.with_(lease_seconds=1.0, heartbeat_seconds=0.2)
    cut_off = Worker(store, clock, fast, worker_id="cut-off")
    assert cut_off.tick(clock.now()) == 1
    child = cut_off._busy[0].process

    def unreachable(*args, **kwargs):
        raise OperationalError("heartbeat", {}, Exception("could not connect to server"))

    monkeypatch.setattr(store, "heartbeat", unreachable)
    deadline = time.monotonic() + 5
    while cut_off.running and time.monotonic() < deadline:
        cut_off.tick(clock.now(), wait_seconds=0.05)
    assert cut_off.running == 0, "the worker kept running a try it could not prove it held"
    assert time.monotonic() < deadline
    child.join(5)
    assert not child.is_alive()
    cut_off.close()
    # the lease is still recorded: the scheduler reaps it once it expires
    assert store.task_instance(run.run_id, "nap").state == "running"


def test_outcomes_survive_a_database_outage(
    harness, write_dag, store, settings, clock, monkeypatch
):
    write_dag(
        "quick.py",
        """
        from orchestrator import DAG, task

        with DAG("quick", schedule=None) as dag:
            @task
            def one(ctx):
                return 1
        """,
    )
    harness.parse()
    run = store.trigger_run("quick", clock.now())
    harness.tick()
    worker = Worker(store, clock, settings, worker_id="patient")
    outage = {"on": True}

    def down(real):
        def finish(*args, **kwargs):
            if outage["on"]:
                raise OperationalError("finish", {}, Exception("server closed the connection"))
            return real(*args, **kwargs)

        return finish

    for name in ("finish_success", "finish_successes", "finish_and_claim"):
        monkeypatch.setattr(store, name, down(getattr(store, name)))
    worker.tick(clock.now())
    deadline = time.monotonic() + 10
    while not worker._outbox and time.monotonic() < deadline:
        worker.tick(clock.now(), wait_seconds=0.05)
    assert len(worker._outbox) == 1  # finished, not yet recorded, not dropped
    assert store.task_instance(run.run_id, "one").state == "running"
    outage["on"] = False
    worker.tick(clock.now())
    worker.close()
    ti = store.task_instance(run.run_id, "one")
    assert ti.state == "success" and ti.try_number == 1


def test_status_shows_leader_standby_and_workers(store, settings, clock):
    store.db_clock = True  # status judges liveness by the database clock
    a = Scheduler(store, clock, settings, scheduler_id="host-a:1:aa")
    b = Scheduler(store, clock, settings, scheduler_id="host-b:2:bb")
    assert a.tick(clock.now()).leader
    assert not b.tick(clock.now()).leader
    w = Worker(store, clock, settings, worker_id="host-c:3:cc", queues=("default", "gpu"))
    w.tick(clock.now())
    w.close()
    w2 = Worker(store, clock, settings, worker_id="host-d:4:dd")
    w2.tick(clock.now())
    status = store.cluster_status(alive_within=timedelta(seconds=30))
    assert status.leader == "host-a:1:aa"
    roles = {s.scheduler_id: s.is_leader for s in status.schedulers}
    assert roles == {"host-a:1:aa": True, "host-b:2:bb": False}
    assert [w.worker_id for w in status.workers] == ["host-d:4:dd"]  # host-c stopped
    w2.close()


@pytest.mark.postgres
def test_listen_notify_wakes_a_listener(pg_database):
    woke = threading.Event()
    listener = wakeup.Listener(pg_database, {wakeup.TASKS: woke}).start()
    notifier = wakeup.Notifier(pg_database)
    try:
        assert listener.connected.wait(10)
        woke.clear()  # the listener wakes everyone once when it connects
        notifier.event(wakeup.TASKS).set()
        assert woke.wait(10)
    finally:
        notifier.close()
        listener.stop()


def test_listen_notify_is_a_no_op_on_sqlite(sqlite_url):
    woke = threading.Event()
    listener = wakeup.Listener(sqlite_url, {wakeup.TASKS: woke}).start()
    try:
        # nothing to listen to on SQLite: no thread, no connection (in-process events
        # do the job there), and a notify only sets the local event
        assert listener._thread is None and not listener.connected.is_set()
        local = threading.Event()
        notifier = wakeup.Notifier(sqlite_url)
        notifier.event(wakeup.TASKS, local).set()
        assert local.is_set() and not woke.is_set() and notifier._conn is None
    finally:
        listener.stop()


def _slow_creation(harness, write_dag, store, settings, clock, monkeypatch, during=None):
    """A leader on a 0.4 s lease whose run-creation step takes 0.3 s of its (fake)
    monotonic clock; ``during`` runs inside that step. Returns it and a queued run that
    only the tick's later start step can start."""
    start_slow_run(harness, write_dag)  # the first tick already released the task
    write_dag(
        "two.py",
        """
        from orchestrator import DAG, task

        with DAG("two", schedule=None) as dag:
            task(task_id="a")(lambda ctx: None)
        """,
    )
    harness.parse()
    run = store.trigger_run("two", clock.now())
    fast = settings.with_(lease_seconds=0.4, heartbeat_seconds=0.1)
    elapsed = [1000.0]  # a fake monotonic clock, moved by hand
    slow = Scheduler(store, clock, fast, scheduler_id="slow", monotonic=lambda: elapsed[0])
    real = slow._create

    def create_slowly(result, now, *, leader):
        elapsed[0] += 0.3  # past half the 0.4 s lease
        if during is not None:
            during()
        return real(result, now, leader=leader)

    monkeypatch.setattr(slow, "_create", create_slowly)
    clock.advance(seconds=31)  # the harness scheduler's lease has expired
    return slow, run


def test_a_leader_renews_its_lease_between_the_steps_of_a_long_tick(
    harness, write_dag, store, settings, clock, monkeypatch
):
    """Issue 29: a tick longer than half the lease is never cut short while the lease
    is still this scheduler's: it renews before the next step and goes on."""
    slow, run = _slow_creation(harness, write_dag, store, settings, clock, monkeypatch)
    result = slow.tick(clock.now())
    assert result.leader and result.runs_started == [run.run_id] and result.released == 1
    holder, _, expires = store.leader()
    assert holder == "slow" and expires == clock.now() + timedelta(seconds=0.4)


def test_a_leader_whose_lease_was_taken_during_a_step_stops_before_the_next(
    harness, write_dag, store, settings, clock, monkeypatch
):
    """Self-fencing: when another scheduler took the lease while a step ran (the step
    outlasted the lease), the old leader acts no more in that tick."""
    lease = timedelta(seconds=0.4)

    other = Store(settings.database_url)

    def taken_over():
        clock.advance(seconds=0.5)  # the slow leader's lease expires...
        assert other.acquire_leadership("other", clock.now(), lease) is not None  # ...taken

    slow, run = _slow_creation(
        harness, write_dag, store, settings, clock, monkeypatch, during=taken_over
    )
    result = slow.tick(clock.now())
    assert result.leader and result.released == 0 and not result.runs_started
    assert store.get_run(run.run_id).state == "queued"
    assert store.leader()[0] == "other"
    other.dispose()
