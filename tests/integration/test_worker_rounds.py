"""How a worker paces its rounds: warm children at start, and gathering a burst of
short tries into one round (one transaction) instead of a round each."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from orchestrator.engine import worker_rounds as worker_module
from orchestrator.engine.task_processes import TaskSlot
from orchestrator.engine.worker import Worker
from orchestrator.store.core import models as m


def test_run_forever_starts_its_children_and_registers_before_it_claims(store, clock, settings):
    worker = Worker(store, clock, settings, worker_id="warm", concurrency=3)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run_forever, args=(stop,), daemon=True)
    thread.start()
    try:
        assert worker.ready.wait(60)
        children = [s.process for s in worker._idle]
        assert len(children) == 3 and all(p.is_alive() for p in children)
        with store.read() as conn:
            registered = conn.execute(select(m.workers.c.worker_id)).scalars().all()
        assert registered == ["warm"]
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert not any(p.is_alive() for p in children)  # stopped with the worker


def _busy_slot(ctx, started: float):
    ours, theirs = ctx.Pipe()
    slot = TaskSlot(SimpleNamespace(sentinel=-1), ours, claim=None, started=started)
    return slot, theirs


@pytest.fixture
def pipes():
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    made = []

    def make(started: float):
        slot, theirs = _busy_slot(ctx, started)
        made.append((slot.conn, theirs))
        return slot, theirs

    yield make
    for a, b in made:
        a.close()
        b.close()


def test_a_round_gathers_the_tries_started_with_the_first_one_to_finish(
    store, clock, settings, pipes
):
    worker = Worker(store, clock, settings, worker_id="gather", concurrency=4)
    now = time.monotonic()
    first, first_end = pipes(now)
    done, done_end = pipes(now)  # finished too, just after the first
    slow, _ = pipes(now)  # still running: not waited for beyond the window
    old, old_end = pipes(now - 10 * worker_module.GATHER_RECENT)  # a long task
    worker._busy = [first, done, slow, old]
    for end in (first_end, done_end, old_end):
        end.send({"ok": True})
    began = time.monotonic()
    gathered = worker._gather([first.conn])
    waited = time.monotonic() - began
    assert gathered == [done.conn]  # not slow (unfinished), not old (not recent)
    assert waited < 1.0  # bounded by GATHER_SECONDS, with a generous margin


def test_a_lone_try_is_not_waited_for(store, clock, settings, pipes):
    worker = Worker(store, clock, settings, worker_id="lone", concurrency=4)
    only, end = pipes(time.monotonic())
    worker._busy = [only]
    end.send({"ok": True})
    assert worker._gather([only.conn]) == []
