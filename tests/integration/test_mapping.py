"""Runtime task mapping on both backends: expansion, execution, reducers, clearing."""

from __future__ import annotations

import json
from datetime import timedelta

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


def test_a_runs_conf_overrides_the_param_a_task_is_mapped_over(harness: Harness, write_dag):
    """Issue 31: the items come from the run's conf when it sets the param (the DAG's
    params are only the defaults), as ctx.params does."""
    run = _run(harness, write_dag, {"items": ["a"], "chunks": [4, 5]})
    results = harness.store.results(run.run_id, ["over_param", "cross"])
    assert json.loads(results["over_param"]) == [40, 50]
    assert json.loads(results["cross"]) == ["p4", "p5", "q4", "q5"]
    assert [t.map_index for t in _instances(harness.store, run.run_id, "over_param")] == [0, 1]
    [event] = [e for e in harness.store.events(kind="task_expanded") if e.task_id == "over_param"]
    assert event.message == "mapped over its literal lists and params: 2 instance(s) created"


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
    harness = Harness(
        store.__class__(settings.database_url, settings=settings.with_(max_map_length=4)),
        settings,
        clock,
    )
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


def test_clearing_the_source_re_expands_and_one_instance_reruns_alone(harness: Harness, write_dag):
    write_dag("load_files.py", LOAD_FILES)
    harness.parse()
    run = harness.store.trigger_run("load_files", harness.clock.now(), conf={"n": 4})
    harness.run_until_finished(run.run_id)
    # one instance: only it runs again, the others keep their single try
    assert harness.store.clear_task(run.run_id, "load", harness.clock.now(), map_index=2) == [
        "load[2]"
    ]
    assert harness.run_until_finished(run.run_id).state == "success"
    loads = _instances(harness.store, run.run_id, "load")
    assert [t.try_number for t in loads] == [1, 1, 2, 1]
    assert [t.try_number for t in harness.store.tries(run.run_id, "load", 2)] == [1, 2]
    # the source with its downstream, with a new length: expanded again
    first_id = loads[0].id
    with harness.store.write() as conn:  # the source now lists 2 files
        from orchestrator.store.core import models as m

        conn.execute(
            m.dag_runs.update().where(m.dag_runs.c.run_id == run.run_id).values(conf='{"n": 2}')
        )
    cleared = harness.store.clear_task(
        run.run_id, "list_files", harness.clock.now(), downstream=True
    )
    assert cleared == ["list_files", "load", "paths", "total"]
    [placeholder] = _instances(harness.store, run.run_id, "load")
    assert (placeholder.map_index, placeholder.state) == (-1, TaskState.SCHEDULED)
    assert harness.run_until_finished(run.run_id).state == "success"
    loads = _instances(harness.store, run.run_id, "load")
    assert [t.map_index for t in loads] == [0, 1] and loads[0].id == first_id
    assert harness.store.results(run.run_id, ["total"]) == {"total": "20"}


def test_a_mapped_task_of_one_instance_cleared_wholly_is_expanded_again(
    harness: Harness, write_dag
):
    """Issue 31: one instance (map index 0) is no placeholder: clearing the task wholly
    collapses it too, so a source that now lists three files gives three instances."""
    write_dag("load_files.py", LOAD_FILES)
    harness.parse()
    run = harness.store.trigger_run("load_files", harness.clock.now(), conf={"n": 1})
    harness.run_until_finished(run.run_id)
    [only] = _instances(harness.store, run.run_id, "load")
    assert (only.map_index, only.state) == (0, TaskState.SUCCESS)
    with harness.store.write() as conn:
        from orchestrator.store.core import models as m

        conn.execute(
            m.dag_runs.update().where(m.dag_runs.c.run_id == run.run_id).values(conf='{"n": 3}')
        )
    harness.store.clear_task(run.run_id, "list_files", harness.clock.now(), downstream=True)
    [placeholder] = _instances(harness.store, run.run_id, "load")
    assert (placeholder.map_index, placeholder.state) == (-1, TaskState.SCHEDULED)
    assert harness.run_until_finished(run.run_id).state == "success"
    assert [t.map_index for t in _instances(harness.store, run.run_id, "load")] == [0, 1, 2]
    assert harness.store.results(run.run_id, ["total"]) == {"total": "30"}


def test_clearing_a_mapped_task_with_an_instance_still_running_keeps_every_instance(
    harness: Harness, write_dag
):
    """Issue 31: only a mapped task whose instances are all cleared collapses back to
    its placeholder; one still running keeps its row, its lease and its map index."""
    store, now = harness.store, harness.clock.now()
    write_dag("load_files.py", LOAD_FILES)
    harness.parse()
    run = store.trigger_run("load_files", now, conf={"n": 3})
    harness.tick()
    [source] = store.claim("w", now, timedelta(seconds=30), limit=5)
    assert store.finish_success(source, json.dumps(["a", "b", "c"]), now)
    claims = {c.map_index: c for c in store.claim("w", now, timedelta(seconds=30), limit=5)}
    assert sorted(claims) == [0, 1, 2]
    for i in (0, 2):
        assert store.finish_success(claims[i], None, now)
    assert store.clear_task(run.run_id, "load", now) == ["load"]
    loads = _instances(store, run.run_id, "load")
    assert [(t.map_index, t.state) for t in loads] == [
        (0, "scheduled"),
        (1, "running"),
        (2, "scheduled"),
    ]
    assert store.finish_success(claims[1], None, now)  # its lease is still its own


def test_clear_names_a_missing_map_index(harness: Harness, write_dag):
    from orchestrator.errors import NotFoundError

    write_dag("load_files.py", LOAD_FILES)
    harness.parse()
    run = harness.store.trigger_run("load_files", harness.clock.now(), conf={"n": 2})
    harness.run_until_finished(run.run_id)
    with pytest.raises(NotFoundError, match=r"no map index 7 \(its map indexes are 0..1\)"):
        harness.store.clear_task(run.run_id, "load", harness.clock.now(), map_index=7)
    with pytest.raises(NotFoundError, match="no map index 0 .it is not mapped"):
        harness.store.clear_task(run.run_id, "total", harness.clock.now(), map_index=0)
    assert {t.state for t in harness.store.task_instances(run.run_id)} == {"success"}


def _ready_to_expand(harness: Harness, write_dag, n: int):
    write_dag("load_files.py", LOAD_FILES)
    harness.parse()
    run = harness.store.trigger_run("load_files", harness.clock.now(), conf={"n": n})
    harness.tick()
    [claim] = harness.store.claim("w", harness.clock.now(), timedelta(seconds=30), limit=5)
    assert claim.task_id == "list_files"
    files = json.dumps([f"f{i}" for i in range(n)])
    # record the success without its release: the placeholder waits to be expanded
    with harness.store.write() as conn:
        from orchestrator.store.core import models as m

        conn.execute(
            m.task_instances.update()
            .where(m.task_instances.c.id == claim.ti_id)
            .values(state="success", result=files, end_date=harness.clock.now())
        )
    run_pk = harness.store.get_run(run.run_id).id
    spec = harness.store.spec("load_files", harness.store.get_run(run.run_id).version_hash)
    return run, run_pk, spec


def test_expansion_happens_once_however_often_it_is_asked(harness: Harness, write_dag):
    from orchestrator.store.tasks.expansion import expand_locked

    run, run_pk, spec = _ready_to_expand(harness, write_dag, 50)
    now = harness.clock.now()
    with harness.store.write() as conn:
        assert expand_locked(conn, spec, run_pk, ["load"], now, 10_000) == 50
    with harness.store.write() as conn:
        assert expand_locked(conn, spec, run_pk, ["load"], now, 10_000) == 0
    harness.tick()  # the scheduler's release_ready finds nothing to expand either
    loads = _instances(harness.store, run.run_id, "load")
    assert [t.map_index for t in loads] == list(range(50))


def test_each_run_expands_from_its_own_sources(harness: Harness, write_dag):
    """Issue 31: two runs of one DAG waiting to expand the same task: expanding the
    later one first takes its own placeholder and its own source's list, and leaves
    the other run's placeholder as it was."""
    from orchestrator.store.core import models as m
    from orchestrator.store.tasks.expansion import expand_locked

    store, now = harness.store, harness.clock.now()
    write_dag("load_files.py", LOAD_FILES)
    harness.parse()
    runs = [
        store.trigger_run("load_files", now, conf={"n": n}, logical_date=now + timedelta(hours=n))
        for n in (2, 3)
    ]
    harness.tick()
    claims = store.claim("w", now, timedelta(seconds=30), limit=5)
    assert sorted(c.run_id for c in claims) == sorted(r.run_id for r in runs)
    with store.write() as conn:  # the sources succeed, without their release
        for c in claims:
            n = 2 if c.run_id == runs[0].run_id else 3
            files = json.dumps([f"{c.run_id}-f{i}" for i in range(n)])
            conn.execute(
                m.task_instances.update()
                .where(m.task_instances.c.id == c.ti_id)
                .values(state="success", result=files, end_date=now)
            )
    records = [store.get_run(r.run_id) for r in runs]
    spec = store.spec("load_files", records[0].version_hash)
    for index in (1, 0):  # the later run first
        with store.write() as conn:
            assert expand_locked(conn, spec, records[index].id, ["load"], now, 10_000) == 2 + index
        if index == 1:
            [waiting] = _instances(store, runs[0].run_id, "load")
            assert (waiting.map_index, waiting.state) == (-1, "scheduled")
    for run, n in zip(runs, (2, 3), strict=True):
        loads = _instances(store, run.run_id, "load")
        assert [t.map_index for t in loads] == list(range(n))
        paths = [json.loads(t.map_kwargs)["path"] for t in loads]
        assert paths == [f"{run.run_id}-f{i}" for i in range(n)]


def test_racing_expansions_create_each_instance_exactly_once(harness: Harness, write_dag):
    import threading

    from orchestrator.store.tasks.expansion import expand_locked

    run, run_pk, spec = _ready_to_expand(harness, write_dag, 2000)
    now = harness.clock.now()
    got: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def expand() -> None:
        try:
            start.wait()
            with harness.store.write() as conn:  # no run lock: the CAS alone must hold
                got.append(expand_locked(conn, spec, run_pk, ["load"], now, 10_000))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=expand) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert sorted(got) == [0, 2000]
    loads = _instances(harness.store, run.run_id, "load")
    assert [t.map_index for t in loads] == list(range(2000))


@pytest.mark.parametrize("n", [2001, 4001])
def test_an_expansion_past_one_insert_batch_creates_every_map_index(
    harness: Harness, write_dag, n: int
):
    """Issue 31: instances are inserted 2,000 rows at a time; one item past a batch (and
    past two) must still get its instance, with its own item, counted once."""
    run, run_pk, spec = _ready_to_expand(harness, write_dag, n)
    harness.tick()  # the scheduler's release_ready expands the placeholder
    loads = _instances(harness.store, run.run_id, "load")
    assert [t.map_index for t in loads] == list(range(n))
    assert {t.state for t in loads} == {"queued"}
    assert [json.loads(t.map_kwargs)["path"] for t in loads] == [f"f{i}" for i in range(n)]
    [event] = harness.store.events(kind="task_expanded", limit=10)
    assert event.message == f"mapped over list_files: {n} instance(s) created"


@pytest.mark.parametrize(
    ("source_state", "result", "placeholder", "kind", "error"),
    [
        ("success", "[]", "skipped", "task_skipped", None),
        ("skipped", None, "skipped", "task_skipped", None),  # an empty map upstream
        ("success", '{"not": "a list"}', "failed", "task_map_failed", "list"),
        ("failed", None, "upstream_failed", "task_map_failed", "list_files did not succeed"),
    ],
)
def test_a_placeholder_that_is_not_expanded_queues_nothing(
    harness: Harness, write_dag, source_state, result, placeholder, kind, error
):
    """Issue 31: skipping or failing the placeholder queues no instance, and says so
    (expand_locked's count is what a finishing worker reports as released)."""
    from orchestrator.store.tasks.expansion import expand_locked

    run, run_pk, spec = _ready_to_expand(harness, write_dag, 3)
    with harness.store.write() as conn:
        from orchestrator.store.core import models as m

        conn.execute(
            m.task_instances.update()
            .where(m.task_instances.c.run_pk == run_pk, m.task_instances.c.task_id == "list_files")
            .values(state=source_state, result=result)
        )
    now = harness.clock.now()
    for _ in range(2):  # and asked again, it changes nothing
        with harness.store.write() as conn:
            assert expand_locked(conn, spec, run_pk, ["load"], now, 10_000) == 0
    [ti] = _instances(harness.store, run.run_id, "load")
    assert (ti.map_index, ti.state, ti.end_date) == (-1, placeholder, now)
    others = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    assert others == {"list_files": source_state, "load": placeholder} | dict.fromkeys(
        ("total", "paths"), "scheduled"
    )  # only the placeholder of this task changed
    if error is None:
        assert ti.error is None
    else:
        assert error in ti.error
    [event] = harness.store.events(kind=kind, limit=10)
    assert event.task_id == "load" and event.run_id == run.run_id
    other = "task_map_failed" if kind == "task_skipped" else "task_skipped"
    assert harness.store.events(kind=other, limit=10) == []


def test_the_unique_key_refuses_a_second_instance_with_one_map_index(harness: Harness, write_dag):
    from sqlalchemy import insert
    from sqlalchemy.exc import IntegrityError

    from orchestrator.store.core import models as m

    run, run_pk, spec = _ready_to_expand(harness, write_dag, 3)
    harness.tick()
    row = harness.store.task_instance(run.run_id, "load", 1)
    with pytest.raises(IntegrityError), harness.store.write() as conn:
        conn.execute(
            insert(m.task_instances).values(
                run_pk=run_pk, dag_id=row.dag_id, run_id=row.run_id, task_id="load",
                map_index=1, state="queued", try_number=0, max_tries=1, queue="default",
            )
        )  # fmt: skip
    assert len(_instances(harness.store, run.run_id, "load")) == 3


def test_a_bad_expand_is_an_import_error_naming_file_and_line(harness: Harness, write_dag):
    write_dag("load_files.py", LOAD_FILES)
    path = write_dag(
        "bad_map.py",
        """
        from orchestrator import DAG, task

        with DAG("bad_map", schedule=None) as dag:
            @task
            def load(ctx, path):
                return path

            load.expand(path=42)
        """,
    )
    result = harness.parse()
    assert result.dags == 1  # the good file is unaffected
    [error] = [e for e in harness.store.import_errors() if e.fileloc == str(path)]
    assert "bad_map.py:9:" in error.message
    assert "needs an upstream task, a list or dag.param(...)" in error.message


ALL_FAIL = """
from orchestrator import DAG, task

with DAG("all_fail", schedule=None, params={"n": [0, 1, 2]}) as dag:
    @task
    def boom(ctx, n):
        raise RuntimeError(f"item {n} fails")

    boom.expand(n=dag.param("n"))
"""


def test_metrics_and_alerts_count_every_instance(harness: Harness, write_dag, settings):
    from orchestrator.observability.alerts.watchdog import AlertWatchdog
    from orchestrator.observability.metrics import StoreCollector

    write_dag("all_fail.py", ALL_FAIL)
    harness.parse()
    watchdog = AlertWatchdog(harness.store, settings)
    watchdog.check(harness.clock.now())
    run = harness.store.trigger_run("all_fail", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "failed"
    alerts = watchdog.check(harness.clock.now())
    dead = sorted(a.message.split(":")[0] for a in alerts if a.kind == "task_dead_lettered")
    assert dead == ["task boom[0]", "task boom[1]", "task boom[2]"]
    families = {f.name: f for f in StoreCollector(harness.store, harness.clock.now()).collect()}
    failed = [s.value for s in families["orchestrator_task_instances"].samples
              if s.labels["state"] == "failed"]  # fmt: skip
    assert failed == [3]


def test_the_fan_out_example_maps_over_its_chunks_param(harness: Harness, settings):
    import shutil
    from pathlib import Path

    shutil.copy(Path(__file__).resolve().parents[2] / "dags" / "fan_out.py", settings.dags_folder)
    harness.parse()
    run = harness.store.trigger_run("fan_out", harness.clock.now(), conf={"chunks": 4})
    assert harness.run_until_finished(run.run_id).state == "success"
    assert len(_instances(harness.store, run.run_id, "square")) == 4
    assert harness.store.results(run.run_id, ["combine"]) == {"combine": str(0 + 1 + 4 + 9)}


def test_migration_0012_keeps_task_instances_and_tries_on_sqlite(sqlite_url):
    """SQLite recreates task_instances for the new unique key: no try may cascade away,
    and every existing instance is map_index -1; downgrading keeps them too."""
    import os

    from sqlalchemy import text

    from orchestrator.store.core.db import make_engine, upgrade

    path = sqlite_url.removeprefix("sqlite:///")
    os.remove(path)
    upgrade(sqlite_url, "0011")
    engine = make_engine(sqlite_url)
    ts = "2026-01-01 00:00:00.000000"
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO dag_runs (id, run_id, dag_id, version_hash, run_type, logical_date, "
                "data_interval_start, data_interval_end, state, conf, created_at) VALUES "
                f"(1, 'r1', 'd', 'h', 'scheduled', '{ts}', '{ts}', '{ts}', 'success', '{{}}', '{ts}')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO task_instances (id, run_pk, dag_id, run_id, task_id, state, "
                "try_number, max_tries, queue) VALUES (1, 1, 'd', 'r1', 't', 'success', 1, 1, 'q')"
            )
        )
        conn.execute(text(
            "INSERT INTO task_tries (ti_id, dag_id, run_id, task_id, try_number, worker, "
            f"state, start_date) VALUES (1, 'd', 'r1', 't', 1, 'w', 'success', '{ts}')"
        ))  # fmt: skip
    engine.dispose()

    def counts() -> list:
        engine = make_engine(sqlite_url)
        with engine.connect() as conn:
            out = [
                conn.execute(text(f"SELECT count(*) FROM {t}")).scalar()
                for t in ("dag_runs", "task_instances", "task_tries")
            ]
            out.append(conn.execute(text("PRAGMA foreign_key_check")).all())
        engine.dispose()
        return out

    upgrade(sqlite_url, "0012")
    assert counts() == [1, 1, 1, []]
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT map_index FROM task_instances")).scalar() == -1
        assert conn.execute(text("SELECT map_index FROM task_tries")).scalar() == -1
    engine.dispose()
    from alembic import command

    from orchestrator.store.core.db import alembic_config

    command.downgrade(alembic_config(sqlite_url), "0011")
    assert counts() == [1, 1, 1, []]


def test_a_run_cleared_whole_expands_its_mapped_tasks_again(harness: Harness, write_dag):
    from orchestrator.store.backfills.backfill_store import clear_run_in

    write_dag("load_files.py", LOAD_FILES)
    harness.parse()
    run = harness.store.trigger_run("load_files", harness.clock.now(), conf={"n": 3})
    harness.run_until_finished(run.run_id)
    rec = harness.store.get_run(run.run_id)
    spec = harness.store.spec("load_files", rec.version_hash)
    with harness.store.write() as conn:
        assert clear_run_in(conn, spec, rec.id, rec.run_id, harness.clock.now(), "test")
    [placeholder] = _instances(harness.store, run.run_id, "load")
    assert (placeholder.map_index, placeholder.state) == (-1, "scheduled")
    assert harness.run_until_finished(run.run_id).state == "success"
    assert [t.map_index for t in _instances(harness.store, run.run_id, "load")] == [0, 1, 2]


BAD_KWARGS = """
from orchestrator import DAG, task

with DAG("bad_kwargs", schedule=None) as dag:
    @task
    def pairs(ctx):
        return [{"a": 1, "b": 2}, "not an object", {"a": 3, "b": 4}, [1, 2]]

    @task
    def add(ctx, a, b):
        return a + b

    @task(trigger_rule="all_done")
    def total(ctx):
        return sum(ctx.upstream("add"))

    add.expand_kwargs(pairs) >> total
"""


def test_an_expand_kwargs_item_that_is_not_an_object_fails_only_its_instance(
    harness: Harness, write_dag
):
    """Airflow's peer case (issue 25): the others run; the bad ones fail at once with
    the item named, no try spent; a cleared bad instance fails again, never running with
    missing arguments."""
    write_dag("bad_kwargs.py", BAD_KWARGS)
    harness.parse()
    store = harness.store
    run = harness.run_until_finished(store.trigger_run("bad_kwargs", harness.clock.now()).run_id)
    adds = _instances(store, run.run_id, "add")
    assert [(t.map_index, t.state) for t in adds] == [
        (0, "success"),
        (1, "failed"),
        (2, "success"),
        (3, "failed"),
    ]
    assert "item 1 is a string ('not an object')" in adds[1].error
    assert "item 3 is a list of 2" in adds[3].error
    assert "expand_kwargs over pairs" in adds[1].error
    assert store.tries(run.run_id, "add", 1) == []  # failed at expansion
    assert store.results(run.run_id, ["add", "total"]) == {"add": "[3,7]", "total": "10"}
    assert run.state == "success"  # its leaf, total (all_done), succeeded
    [event] = store.events(kind="task_expanded", limit=5)
    assert "4 instance(s) created; 2 failed at once" in event.message

    assert store.clear_task(run.run_id, "add", harness.clock.now(), map_index=1) == ["add[1]"]
    harness.run_until_finished(run.run_id)
    again = store.task_instance(run.run_id, "add", 1)
    assert again.state == "failed"
    [try_] = store.tries(run.run_id, "add", 1)
    assert "instance 1 has no arguments" in (try_.error or "")
