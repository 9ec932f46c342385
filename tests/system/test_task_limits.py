"""max_active_tasks and max_active_tis_per_dag with real worker processes racing on the
real PostgreSQL (issue 14 item 6): a limit is never exceeded, and it is used in full."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from orchestrator.store.core import models as m
from tests.system.cluster import cluster, wait_for
from tests.system.test_cluster import FAST, pg_settings, pg_store  # noqa: F401 - fixtures

pytestmark = [pytest.mark.system, pytest.mark.postgres]

LIMITED = """
import time
from orchestrator import DAG, task

def nap(ctx):
    time.sleep(0.4)

with DAG("three_at_a_time", schedule=None, max_active_tasks=3) as dag:
    for i in range(18):
        task(task_id=f"t{i}")(nap)

with DAG("one_per_task", schedule=None) as other:
    task(task_id="only_one", max_active_tis_per_dag=1)(nap)
"""


def _states_at_once(store, run_ids: list[str], task_id: str) -> list[str]:
    ti = m.task_instances
    with store.read() as conn:
        return list(
            conn.execute(
                select(ti.c.state).where(ti.c.run_id.in_(run_ids), ti.c.task_id == task_id)
            ).scalars()
        )


def test_limits_hold_with_six_workers_claiming(pg_settings, pg_store, write_dag, tmp_path):  # noqa: F811
    write_dag("limited.py", LIMITED)
    dag_running: list[int] = []
    task_running: list[int] = []
    with cluster(pg_settings, tmp_path, **FAST) as c:
        c.start("scheduler")
        for _ in range(6):
            c.start("worker", "--concurrency", "3")
        wait_for(lambda: len(pg_store.list_dags()) == 2, "the DAGs to be parsed", 30)
        now = datetime.now(UTC)
        run = pg_store.trigger_run("three_at_a_time", now)
        others = [
            pg_store.trigger_run("one_per_task", now, logical_date=now - timedelta(hours=i))
            for i in range(5)
        ]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            tis = pg_store.task_instances(run.run_id)
            dag_running.append(sum(t.state == "running" for t in tis))
            # the five runs' instances in one statement (one snapshot): read one by one,
            # a hand-over between two reads would show two running that never were
            states = _states_at_once(pg_store, [o.run_id for o in others], "only_one")
            task_running.append(states.count("running"))
            if all(t.state == "success" for t in tis) and all(s == "success" for s in states):
                break
            time.sleep(0.05)
        wait_for(lambda: pg_store.get_run(run.run_id).state == "success", c.logs(), 20)
        for o in others:
            wait_for(lambda o=o: pg_store.get_run(o.run_id).state == "success", c.logs(), 20)
    print(f"running counts seen: dag {sorted(set(dag_running))}, task {sorted(set(task_running))}")
    assert max(dag_running) == 3  # never more, and used in full
    assert max(task_running) == 1
