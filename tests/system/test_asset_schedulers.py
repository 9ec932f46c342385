"""Asset-triggered runs across scheduler crashes (issue 15), on PostgreSQL.

Two real schedulers; the leader is SIGKILLed again and again while two external
producer processes emit events and a worker runs a producer DAG whose task has an
outlet. At the end every event was consumed by exactly one run of each consumer:
none twice, none lost.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from orchestrator.store.core import models as m
from tests.system.cluster import cluster, wait_for
from tests.system.test_cluster import FAST

pytestmark = [pytest.mark.system, pytest.mark.postgres]


@pytest.fixture
def pg_settings(pg_database, tmp_path, dags_dir):
    from orchestrator.settings import Settings
    from tests.conftest import _truncate_pg

    _truncate_pg(pg_database)
    return Settings.load({}, cwd=str(tmp_path), database_url=pg_database,
                         dags_folder=str(dags_dir), state_dir=str(tmp_path / "state"),
                         lease_seconds=2, heartbeat_seconds=0.5)  # fmt: skip


@pytest.fixture
def pg_store(pg_settings):
    from orchestrator.store import Store

    store = Store(pg_settings.database_url)
    yield store
    store.dispose()


EMITTER = """
import random, sys, time
from datetime import UTC, datetime
from orchestrator.settings import Settings
from orchestrator.store import Store

store = Store(Settings.load().database_url)
name, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(name)
for i in range(n):
    uri = "test://a" if i % 2 == 0 else "test://b"
    store.emit_asset_event(uri, {"by": name, "i": i}, datetime.now(UTC), emitter=name)
    time.sleep(rng.uniform(0.02, 0.1))
"""

DAGS = """
from orchestrator import DAG, Asset, task

a, b = Asset("test://a"), Asset("test://b")

with DAG("source", schedule=None) as source:
    @task(outlets=[a])
    def make_a(ctx):
        return 1

# one run per event (backfill replays each event set), and one per a-and-b set
with DAG("per_event", schedule=a | b, misfire="backfill", max_active_runs=1,
         overlap="queue") as per_event:
    @task
    def see(ctx):
        return len(ctx.triggering_asset_events)

with DAG("both", schedule=[a, b]) as both:
    @task
    def see_both(ctx):
        return len(ctx.triggering_asset_events)
"""


def _start_python(c, script: str, *argv: str) -> subprocess.Popen:
    """A real process running ``script``, killed with the cluster at the end."""
    log = open(c.tmp / f"proc-{len(c.procs)}-python.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-c", script, *argv], env=c.env, cwd=c.tmp,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    c.procs.append(proc)
    c._logs.append(log)
    return proc


def _consumed(store, dag_id: str) -> Counter:
    q = (
        select(m.asset_run_events.c.event_id)
        .join(m.dag_runs, m.dag_runs.c.id == m.asset_run_events.c.run_pk)
        .where(m.dag_runs.c.dag_id == dag_id)
    )
    with store.read() as conn:
        return Counter(conn.execute(q).scalars())


def _queued(store, dag_id: str) -> set[int]:
    with store.read() as conn:
        return set(
            conn.execute(
                select(m.asset_queue.c.event_id).where(m.asset_queue.c.dag_id == dag_id)
            ).scalars()
        )


def test_killed_leaders_never_duplicate_or_lose_an_asset_triggered_run(
    pg_settings, pg_store, write_dag, tmp_path
):
    write_dag("assets.py", DAGS)
    emits = 40
    with cluster(pg_settings, tmp_path, **FAST) as c:
        schedulers = [c.start("scheduler"), c.start("scheduler")]
        c.start("worker", "--concurrency", "4")
        wait_for(lambda: len(pg_store.list_dags()) == 3, "the DAGs to be parsed", 60)
        for _ in range(6):  # task-made events, recorded in the tries' success transactions
            pg_store.trigger_run("source", datetime.now(UTC))
            time.sleep(0.01)
        emitters = [_start_python(c, EMITTER, name, str(emits)) for name in ("ext-1", "ext-2")]
        kills = 0
        while any(e.poll() is None for e in emitters) or kills < 3:
            lease = wait_for(pg_store.leader, "a leader", 30)
            pid = int(lease[0].split(":")[1])
            victim = next((p for p in schedulers if p.pid == pid), None)
            time.sleep(0.7)
            if victim is not None and victim.poll() is None:
                c.kill(victim)
                kills += 1
                schedulers.remove(victim)
                schedulers.append(c.start("scheduler"))
        assert all(e.wait(60) == 0 for e in emitters), c.logs()
        wait_for(
            lambda: all(r.state == "success" for r in pg_store.list_runs("source", limit=100)),
            "the producer runs to finish",
            90,
        )
        events = {e.id: e for e in pg_store.asset_events(limit=100_000)}
        assert len(events) == 2 * emits + 6
        wait_for(lambda: not _queued(pg_store, "per_event"), "every event to be consumed", 60)
        wait_for(
            lambda: (
                len(_queued(pg_store, "both")) == 0
                or {events[i].uri for i in _queued(pg_store, "both")}
                in ({"test://a"}, {"test://b"})
            ),
            "the both-queue to hold at most an unmatched tail",
            60,
        )
        time.sleep(1.5)  # a scheduler still running would show a duplicate now
        per_event = _consumed(pg_store, "per_event")
        both = _consumed(pg_store, "both")
        both_left = _queued(pg_store, "both")
        logs = c.logs()
    assert kills >= 3
    # per_event: every event consumed, each by exactly one run, one run per event
    assert set(per_event) == set(events) and max(per_event.values()) == 1, logs
    runs = [r for r in pg_store.list_runs("per_event", limit=10_000)]
    assert len(runs) == len(events)
    assert all(r.run_type == "asset_triggered" for r in runs)
    # both: each event consumed at most once; consumed + still queued = every event
    assert max(both.values()) == 1
    assert set(both) | both_left == set(events) and not set(both) & both_left
    print(f"{kills} leaders killed; {len(events)} events; {len(runs)} per-event runs")
