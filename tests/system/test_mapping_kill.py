"""A 2,000-item mapped run while real scheduler and worker processes are SIGKILLed:
around the expansion (the source's success), then in the middle of the instances. The
expansion is all or nothing and happens once; every map index exists exactly once and
succeeds; the reducer sees all 2,000 results."""

from __future__ import annotations

import signal
import time

import pytest

from orchestrator.clock import SystemClock
from orchestrator.store.core import models as m
from tests.system.cluster import cluster, wait_for

pytestmark = pytest.mark.system
ITEMS = 2000


def _loads(store, run_id: str) -> list[tuple[int, str]]:
    ti = m.task_instances
    with store.read() as conn:
        rows = conn.execute(ti.select().where(ti.c.run_id == run_id, ti.c.task_id == "load")).all()
    return [(r.map_index, r.state) for r in rows]


def test_killing_worker_and_scheduler_during_a_2000_item_expansion(
    store, settings, write_dag, tmp_path
):
    marker = tmp_path / "listed"
    write_dag(
        "big_map.py",
        f"""
        from orchestrator import DAG, task

        with DAG("big_map", schedule=None) as dag:
            @task
            def list_items(ctx):
                items = list(range({ITEMS}))
                open({str(marker)!r}, "a").write(f"{{ctx.try_number}}\\n")
                return items

            @task(retries=2, retry_delay=0)
            def load(ctx, item):
                return item

            @task
            def total(ctx):
                values = ctx.upstream("load")
                assert values == list(range({ITEMS})), "not in map order"
                return len(values)

            load.expand(item=list_items) >> total
        """,
    )
    env = {
        "ORCHESTRATOR_LEASE_SECONDS": "3",
        "ORCHESTRATOR_HEARTBEAT_SECONDS": "1",
        "ORCHESTRATOR_WORKER_POLL_SECONDS": "0.1",
    }
    with cluster(settings, tmp_path, **env) as c:
        sched = c.start("scheduler")
        worker = c.start("worker")
        try:
            wait_for(lambda: store.get_dag("big_map") if _has_dag(store) else None, "the DAG", 60)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{c.logs()}") from None
        run = store.trigger_run("big_map", SystemClock().now())
        # 1. the moment the source returns its list: kill both, mid-finish or just after
        try:
            wait_for(marker.exists, "the source to produce its list", 120)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{c.logs()}") from None
        c.kill(worker)
        c.kill(sched)
        seen = _loads(store, run.run_id)
        assert len(seen) in (1, ITEMS), f"a half expansion: {len(seen)} instances"
        # 2. again, with instances running
        sched = c.start("scheduler")
        worker = c.start("worker")
        wait_for(
            lambda: sum(s == "success" for _, s in _loads(store, run.run_id)) >= 300,
            "300 instances to succeed",
            180,
        )
        c.kill(worker)
        c.kill(sched, signal.SIGKILL)
        time.sleep(0.5)
        c.start("scheduler")
        c.start("worker")
        done = wait_for(
            lambda: (r := store.get_run(run.run_id)).state in ("success", "failed") and r,
            "the run to finish",
            300,
        )
        logs = c.logs()
    assert done.state == "success", logs
    loads = _loads(store, run.run_id)
    indexes = sorted(i for i, _ in loads)
    assert indexes == list(range(ITEMS)), "a duplicate or a missing map index"
    assert {s for _, s in loads} == {"success"}
    assert store.results(run.run_id, ["total"]) == {"total": str(ITEMS)}
    expanded = [
        e for e in store.events(run_id=run.run_id, limit=10_000) if e.kind == "task_expanded"
    ]
    assert len(expanded) == 1 and f"{ITEMS} instance(s)" in expanded[0].message


def _has_dag(store) -> bool:
    from orchestrator.errors import NotFoundError

    try:
        store.get_dag("big_map")
    except NotFoundError:
        return False
    return True
