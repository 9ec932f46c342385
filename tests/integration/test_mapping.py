"""Runtime task mapping on both backends: expansion, execution, reducers, clearing."""

from __future__ import annotations

import json

import pytest

from orchestrator.states import TaskState
from tests.helpers import Harness

LOAD_FILES = """
from orchestrator import DAG, task

with DAG("load_files", schedule=None, params={"n": 3}) as dag:
    @task
    def list_files(ctx):
        return [f"part-{i}.csv" for i in range(ctx.params.get("n", 3))]

    @task(retries=2)
    def load(ctx, path, bucket):
        ctx.log.info("loading %s from %s as instance %s", path, bucket, ctx.map_index)
        return {"path": path, "rows": 10, "index": ctx.map_index, "key": ctx.idempotency_key}

    @task
    def total(ctx):
        return sum(r["rows"] for r in ctx.upstream("load"))

    @task
    def paths(ctx):
        return [r["path"] for r in ctx.upstream("load")]

    load.partial(bucket="raw").expand(path=list_files) >> [total, paths]
"""


def _instances(store, run_id: str, task_id: str):
    return sorted(
        (t for t in store.task_instances(run_id) if t.task_id == task_id),
        key=lambda t: t.map_index,
    )


def test_mapped_task_runs_one_instance_per_item_and_reducer_gets_list(harness: Harness, write_dag):
    write_dag("load_files.py", LOAD_FILES)
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("load_files", harness.clock.now(), conf={"n": 5})
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    loads = _instances(harness.store, run.run_id, "load")
    assert [t.map_index for t in loads] == [0, 1, 2, 3, 4]
    assert {t.state for t in loads} == {TaskState.SUCCESS}
    results = json.loads(harness.store.results(run.run_id, ["load"])["load"])
    assert [r["path"] for r in results] == [f"part-{i}.csv" for i in range(5)]
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert results[3]["key"] == f"load_files/{run.run_id}/load/3"
    assert harness.store.results(run.run_id, ["total"]) == {"total": "50"}
    assert json.loads(harness.store.results(run.run_id, ["paths"])["paths"]) == [
        f"part-{i}.csv" for i in range(5)
    ]
    # unmapped tasks keep map_index -1
    assert [t.map_index for t in _instances(harness.store, run.run_id, "total")] == [-1]
