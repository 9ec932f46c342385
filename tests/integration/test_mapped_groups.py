"""Mapped task groups on both backends (issue 25 item 7): one group instance per item,
instance i of a task waiting for instance i of the task before it in the group, trigger
rules per instance, results collected downstream, and ``tg__1`` for a second call."""

from __future__ import annotations

import json

from orchestrator.states import TaskState
from tests.helpers import Harness

PER_FILE = """
from orchestrator import DAG, task, task_group

with DAG("per_file", schedule=None) as dag:
    @task
    def files():
        return ["a.csv", "bad.csv", "c.csv"]

    @task
    def clean(path, ti):
        if path == "bad.csv":
            raise ValueError("cannot clean " + path)
        return {"path": path, "index": ti.map_index}

    @task
    def load(row, path, suffix):
        return row["path"] + suffix + ":" + str(row["index"]) + ":" + path

    @task(trigger_rule="all_done")
    def audit(path, ti):
        return path + "@" + str(ti.map_index)

    @task(trigger_rule="all_done")
    def total(rows):
        return rows

    @task_group
    def per_file(path, suffix):
        loaded = load(clean(path), path, suffix)
        loaded >> audit(path)
        return loaded

    total(per_file.partial(suffix="!").expand(path=files()))
"""


def _by_index(store, run_id: str, task_id: str) -> dict[int, object]:
    return {t.map_index: t for t in store.task_instances(run_id) if t.task_id == task_id}


def _result(store, run_id: str, task_id: str):
    raw = store.results(run_id, [task_id])
    return json.loads(raw[task_id]) if task_id in raw else None


def test_each_group_instance_runs_its_item_and_a_failed_instance_stops_only_its_own_tasks(
    harness: Harness, write_dag
):
    write_dag("per_file.py", PER_FILE)
    assert harness.parse().dags == 1
    assert harness.store.import_errors() == []
    run = harness.store.trigger_run("per_file", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    store = harness.store
    cleans = _by_index(store, run.run_id, "per_file.clean")
    loads = _by_index(store, run.run_id, "per_file.load")
    audits = _by_index(store, run.run_id, "per_file.audit")
    assert sorted(cleans) == sorted(loads) == sorted(audits) == [0, 1, 2]
    assert {i: t.state for i, t in cleans.items()} == {
        0: TaskState.SUCCESS,
        1: TaskState.FAILED,
        2: TaskState.SUCCESS,
    }
    # instance 1's load waits on clean[1] only: it is upstream_failed, the others ran
    assert {i: t.state for i, t in loads.items()} == {
        0: TaskState.SUCCESS,
        1: TaskState.UPSTREAM_FAILED,
        2: TaskState.SUCCESS,
    }
    # all_done per instance: audit[1] ran although load[1] did not
    assert all(t.state == TaskState.SUCCESS for t in audits.values())
    assert sorted(i for i, t in loads.items() if t.state == TaskState.SUCCESS) == [0, 2]
    # downstream of the group: every instance's result, in map order
    assert _result(store, run.run_id, "total") == ["a.csv!:0:a.csv", "c.csv!:2:c.csv"]
    # as in Airflow, the run's state is its leaves': audit and total (all_done) succeeded
    assert run.state == "success"


LITERAL_TWICE = """
from orchestrator import DAG, task, task_group

with DAG("twice", schedule=None) as dag:
    @task
    def double(x):
        return x * 2

    @task
    def plus(y, n):
        return y + n

    @task
    def gather(values):
        return values

    @task_group
    def calc(x, n=100):
        return plus(double(x), n)

    gather(calc.expand(x=[1, 2, 3]))
    gather(calc.expand_kwargs([{"x": 10, "n": 1}, {"x": 20, "n": 2}]))
"""


def test_a_group_called_twice_gets_tg__1_and_expand_kwargs_maps_each_dict(
    harness: Harness, write_dag
):
    write_dag("twice.py", LITERAL_TWICE)
    assert harness.parse().dags == 1
    assert harness.store.import_errors() == []
    run = harness.store.trigger_run("twice", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    ids = {t.task_id for t in harness.store.task_instances(run.run_id)}
    assert {"calc.double", "calc.plus", "calc__1.double", "calc__1.plus"} <= ids
    assert _result(harness.store, run.run_id, "gather") == [102, 104, 106]
    assert _result(harness.store, run.run_id, "gather__1") == [21, 42]


EMPTY_AND_FAILED_SOURCE = """
from orchestrator import DAG, task, task_group

with DAG("sources", schedule=None) as dag:
    @task
    def nothing():
        return []

    @task
    def broken():
        raise RuntimeError("no listing")

    @task
    def work(x):
        return x

    @task_group
    def grp(x):
        work(x)

    grp.expand(x=nothing())
    grp.expand(x=broken())
"""


def test_an_empty_source_skips_the_group_and_a_failed_one_fails_it_upstream(
    harness: Harness, write_dag
):
    write_dag("sources.py", EMPTY_AND_FAILED_SOURCE)
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("sources", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    states = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    assert states["grp.work"] == TaskState.SKIPPED
    assert states["grp__1.work"] == TaskState.UPSTREAM_FAILED
    assert run.state == "failed"


SHELL_IN_GROUP = """
from orchestrator import DAG, task, task_group

with DAG("shell_group", schedule=None) as dag:
    @task_group
    def per_day(day):
        dag.shell("echo_day", "echo day=$(printf %s {{ day }}) > {{ day }}.out")

    per_day.expand(day=["mon", "tue; touch HACKED"])
"""


def test_a_shell_task_of_a_mapped_group_gets_its_item_as_data(
    harness: Harness, write_dag, dags_dir
):
    write_dag("shell_group.py", SHELL_IN_GROUP)
    assert harness.parse().dags == 1
    assert harness.store.import_errors() == []
    run = harness.store.trigger_run("shell_group", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    assert (dags_dir / "mon.out").read_text().strip() == "day=mon"
    assert (dags_dir / "tue; touch HACKED.out").read_text().strip() == "day=tue; touch HACKED"
    assert not (dags_dir / "HACKED").exists()


def test_clearing_one_group_instance_reruns_it_alone(harness: Harness, write_dag):
    write_dag("twice.py", LITERAL_TWICE)
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("twice", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    before = _by_index(harness.store, run.run_id, "calc.plus")
    harness.store.clear_task(
        run.run_id, "calc.double", harness.clock.now(), map_index=1, downstream=True
    )
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    after = _by_index(harness.store, run.run_id, "calc.plus")
    assert {i: t.try_number for i, t in after.items()} == {
        0: before[0].try_number,
        1: before[1].try_number + 1,
        2: before[2].try_number,
    }
    assert _result(harness.store, run.run_id, "gather") == [102, 104, 106]


PULL_IN_GROUP = """
from orchestrator import DAG, task, task_group

with DAG("pulls", schedule=None) as dag:
    @task
    def first(x):
        return x * 10

    @task
    def second(ti):
        return {
            "same": ti.xcom_pull(task_ids="grp.first"),
            "all": ti.xcom_pull(task_ids="grp.first", map_indexes=[0, 1]),
        }

    @task_group
    def grp(x):
        first(x) >> second()

    grp.expand(x=[1, 2])
"""


def test_a_pull_inside_a_mapped_group_reads_the_same_instance(harness: Harness, write_dag):
    write_dag("pulls.py", PULL_IN_GROUP)
    assert harness.parse().dags == 1
    assert harness.store.import_errors() == []
    run = harness.store.trigger_run("pulls", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    assert sorted(_by_index(harness.store, run.run_id, "grp.second")) == [0, 1]
    assert _result(harness.store, run.run_id, "grp.second") == [
        {"same": 10, "all": [10, 20]},
        {"same": 20, "all": [10, 20]},
    ]
