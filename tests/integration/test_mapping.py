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


VARIANTS = """
from orchestrator import DAG, task

with DAG("variants", schedule=None, params={"chunks": [1, 2, 3], "items": None}) as dag:
    @task
    def source(ctx):
        return ctx.params["items"]

    @task
    def over_param(ctx, chunk):
        return chunk * 10

    @task
    def cross(ctx, a, b):
        return f"{a}{b}"

    @task
    def pairs(ctx):
        return [{"x": 1, "y": 2}, {"x": 3, "y": 4}]

    @task
    def add(ctx, x, y):
        return x + y

    @task
    def doubled(ctx, value):
        return value * 2

    @task
    def from_source(ctx, item):
        return item

    @task(trigger_rule="all_done")
    def after(ctx):
        return ctx.upstream("from_source")

    over_param.expand(chunk=dag.param("chunks"))
    cross.expand(a=["p", "q"], b=dag.param("chunks"))
    add.expand_kwargs(pairs)
    doubled.expand(value=add)
    from_source.expand(item=source) >> after
"""


def _run(harness: Harness, write_dag, conf=None):
    write_dag("variants.py", VARIANTS)
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("variants", harness.clock.now(), conf=conf or {})
    return harness.run_until_finished(run.run_id)


def test_params_literals_cross_product_kwargs_and_mapped_over_mapped(harness: Harness, write_dag):
    run = _run(harness, write_dag, {"items": ["a", "b"]})
    results = harness.store.results(
        run.run_id, ["over_param", "cross", "add", "doubled", "from_source"]
    )
    assert json.loads(results["over_param"]) == [10, 20, 30]
    # the cross product in argument order, the last argument varying fastest
    assert json.loads(results["cross"]) == ["p1", "p2", "p3", "q1", "q2", "q3"]
    assert json.loads(results["add"]) == [3, 7]
    assert json.loads(results["doubled"]) == [6, 14]
    assert json.loads(results["from_source"]) == ["a", "b"]
    assert run.state == "success"


def test_not_a_list_fails_the_mapped_task_naming_the_source(harness: Harness, write_dag):
    run = _run(harness, write_dag, {"items": "not a list"})
    [ti] = _instances(harness.store, run.run_id, "from_source")
    assert ti.state == TaskState.FAILED and ti.map_index == -1
    assert "source" in ti.error and "not a list" in ti.error and "from_source" in ti.error
    # all_done downstream still runs, and sees an empty list
    [after] = _instances(harness.store, run.run_id, "after")
    assert after.state == TaskState.SUCCESS
    assert harness.store.results(run.run_id, ["after"]) == {"after": "[]"}
    assert run.state == "success"  # a run's state is its leaves' (as Airflow)


def test_empty_list_skips_the_mapped_task_and_downstream_follows_its_rule(
    harness: Harness, write_dag
):
    run = _run(harness, write_dag, {"items": []})
    [ti] = _instances(harness.store, run.run_id, "from_source")
    assert ti.state == TaskState.SKIPPED
    [after] = _instances(harness.store, run.run_id, "after")
    assert after.state == TaskState.SUCCESS  # all_done: a skip is done
    assert run.state == "success"


def test_longer_than_max_map_length_fails_naming_length_limit_and_source(
    store, settings, clock, write_dag
):
    harness = Harness(store.__class__(settings.database_url, settings=settings.with_(max_map_length=4)), settings, clock)
    try:
        run = _run(harness, write_dag, {"items": list(range(5))})
        [ti] = _instances(harness.store, run.run_id, "from_source")
        assert ti.state == TaskState.FAILED
        assert "5 items from source" in ti.error and "max_map_length (4)" in ti.error
        assert harness.store.results(run.run_id, ["cross"]) == {}  # 6 items > 4 too
        [cross] = _instances(harness.store, run.run_id, "cross")
        assert "6 items" in cross.error and "a from a literal list (2)" in cross.error
    finally:
        harness.close()
        harness.store.dispose()


RETRYING = """
from orchestrator import DAG, task

with DAG("retrying", schedule=None) as dag:
    @task
    def items(ctx):
        return [0, 1, 2, 3]

    @task(retries=1, retry_delay=0)
    def work(ctx, n):
        if n == 2 and ctx.try_number == 1:
            raise RuntimeError("first try of 2 fails")
        if n == 3:
            raise RuntimeError("3 always fails")
        return n

    @task
    def reduce(ctx):
        return ctx.upstream("work")

    @task(trigger_rule="all_done")
    def report(ctx):
        return ctx.upstream("work")

    work.expand(n=items) >> [reduce, report]
"""


def test_retries_are_per_instance_and_trigger_rules_count_every_instance(
    harness: Harness, write_dag
):
    write_dag("retrying.py", RETRYING)
    harness.parse()
    run = harness.store.trigger_run("retrying", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    works = _instances(harness.store, run.run_id, "work")
    assert [(t.map_index, t.state, t.try_number) for t in works] == [
        (0, "success", 1),
        (1, "success", 1),
        (2, "success", 2),
        (3, "failed", 2),
    ]
    [reduce] = _instances(harness.store, run.run_id, "reduce")
    assert reduce.state == TaskState.UPSTREAM_FAILED
    assert harness.store.results(run.run_id, ["report"]) == {"report": "[0, 1, 2]"}
    assert run.state == "failed"
    tries = harness.store.tries(run.run_id, "work")
    assert sorted((t.map_index, t.try_number) for t in tries) == [
        (0, 1), (1, 1), (2, 1), (2, 2), (3, 1), (3, 2)
    ]  # fmt: skip
    assert all(f"map_index={t.map_index}/" in t.log_path for t in tries)


SHELL = """
from orchestrator import DAG, task

with DAG("shell_map", schedule=None) as dag:
    @task
    def names(ctx):
        return ["plain", "a b", "$(echo INJECTED)", "'; echo INJECTED; '"]

    echo = dag.shell("echo", "echo [{{ name }}] {{ greeting }} {{ map_index }}")
    echo.partial(greeting="hi").expand(name=names)
"""


def test_shell_task_gets_mapped_values_as_quoted_values(harness: Harness, write_dag, settings):
    from pathlib import Path

    write_dag("shell_map.py", SHELL)
    harness.parse()
    run = harness.store.trigger_run("shell_map", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "success"
    texts = {}
    for t in harness.store.tries(run.run_id, "echo"):
        texts[t.map_index] = (Path(settings.log_dir) / t.log_path).read_text()
    assert "[plain] hi 0" in texts[0]
    assert "[a b] hi 1" in texts[1]
    assert "[$(echo INJECTED)] hi 2" in texts[2]
    assert "['; echo INJECTED; '] hi 3" in texts[3]
    assert all("\nINJECTED" not in t for t in texts.values())
