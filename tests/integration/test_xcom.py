"""Results of any task of the run (issue 25 item 3), on both backends: ``ti.xcom_pull``
of a task that is not upstream, a pull of an unfinished task, ``ti.xcom_push`` read
downstream, ``map_indexes``, a template pull in a shell command, an oversized push and
a clear that removes pushed values."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from orchestrator.store.core import models as m
from tests.helpers import Harness

PULLS = """
import os, shlex
from orchestrator import DAG, task

HERE = os.path.dirname(__file__)

with DAG("pulls", schedule=None) as dag:
    @task
    def first():
        return {"rows": 3}

    @task
    def middle(ti):
        ti.xcom_push("note", {"seen": "first"})
        ti.xcom_push(key="count", value=7)
        ti.xcom_push("evil", "$(touch " + HERE + "/pwned) `touch " + HERE + "/pwned2`")
        return "m"

    @task
    def item(x):
        return x * 10

    @task
    def last(ctx, ti):
        return {
            "first": ti.xcom_pull(task_ids="first"),
            "many": ti.xcom_pull(task_ids=["first", "middle"]),
            "note": ti.xcom_pull(task_ids="middle", key="note"),
            "count": ctx.result("middle", "count"),
            "missing_key": ti.xcom_pull(task_ids="middle", key="nothing"),
            "mapped": ti.xcom_pull(task_ids="item"),
            "one": ti.xcom_pull(task_ids="item", map_indexes=1),
            "some": ti.xcom_pull(task_ids="item", map_indexes=[2, 0]),
            "rows": ctx.result("first", "rows"),
        }

    shell = dag.shell(
        "echo",
        "echo got {{ ti.xcom_pull(task_ids='middle', key='note') }} "
        "{{ ti.xcom_pull(task_ids='middle', key='evil') }} > " + shlex.quote(HERE + "/echo.out"),
    )

    mapped = item.expand(x=[1, 2, 3])
    first() >> middle >> mapped >> last
    middle >> shell
"""


def test_pull_from_tasks_that_are_not_upstream_pushed_keys_and_map_indexes(
    harness: Harness, write_dag
):
    write_dag("pulls.py", PULLS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("pulls", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success", [
        (t.task_id, t.error) for t in harness.store.task_instances(run.run_id)
    ]
    got = json.loads(harness.store.results(run.run_id, ["last"])["last"])
    assert got == {
        "first": {"rows": 3},  # not an upstream task of last
        "many": [{"rows": 3}, "m"],
        "note": {"seen": "first"},
        "count": 7,
        "missing_key": None,
        "mapped": [10, 20, 30],
        "one": 20,
        "some": [30, 10],
        "rows": 3,  # a key of a dict result
    }


def test_a_template_pull_in_a_shell_command_is_passed_as_data(
    harness: Harness, write_dag, dags_dir
):
    write_dag("pulls.py", PULLS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("pulls", harness.clock.now())
    harness.run_until_finished(run.run_id)
    echo = harness.store.task_instance(run.run_id, "echo")
    assert echo.state == "success", echo.error
    out = (dags_dir / "echo.out").read_text()
    assert out.startswith("got {'seen': 'first'} $(touch ")
    assert not (dags_dir / "pwned").exists() and not (dags_dir / "pwned2").exists()


UNFINISHED = """
from orchestrator import DAG, task

with DAG("early", schedule=None) as dag:
    @task
    def early(ti):
        return ti.xcom_pull(task_ids="later")

    @task
    def later():
        return 1

    early >> later
"""


def test_a_pull_of_an_unfinished_task_fails_naming_it_and_its_state(harness: Harness, write_dag):
    write_dag("early.py", UNFINISHED)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("early", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "failed"
    early = harness.store.task_instance(run.run_id, "early")
    assert early.state == "failed"
    assert "task 'later' has not finished yet (state scheduled)" in early.error


OVERSIZED = """
from orchestrator import DAG, task

with DAG("big", schedule=None) as dag:
    @task(retries=0)
    def big(ti):
        ti.xcom_push("blob", "x" * 70000)

    @task(retries=0)
    def odd(ti):
        ti.xcom_push("when", object())
"""


def test_an_oversized_or_non_json_push_fails_naming_task_key_and_size(harness: Harness, write_dag):
    write_dag("big.py", OVERSIZED)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("big", harness.clock.now())
    harness.run_until_finished(run.run_id)
    big = harness.store.task_instance(run.run_id, "big")
    assert big.state == "failed"
    assert "task 'big': xcom_push key 'blob': the value is 70002 bytes of JSON" in big.error
    assert "65536-byte limit (max_result_bytes)" in big.error
    odd = harness.store.task_instance(run.run_id, "odd")
    assert "task 'odd': xcom_push key 'when': the value is not JSON (object)" in odd.error
    with harness.store.read() as conn:
        assert conn.execute(select(func.count()).select_from(m.task_xcoms)).scalar() == 0


def test_a_clear_removes_the_pushed_values(harness: Harness, write_dag):
    write_dag("pulls.py", PULLS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("pulls", harness.clock.now())
    harness.run_until_finished(run.run_id)
    middle = harness.store.task_instance(run.run_id, "middle")

    def pushed() -> list[str]:
        with harness.store.read() as conn:
            rows = conn.execute(
                select(m.task_xcoms.c.key).where(m.task_xcoms.c.ti_id == middle.id)
            ).scalars()
            return sorted(rows)

    assert pushed() == ["count", "evil", "note"]
    harness.store.clear_task(run.run_id, "middle", harness.clock.now())
    assert pushed() == []


def test_retention_deletes_the_pushed_values_with_their_run(harness: Harness, write_dag):
    write_dag("pulls.py", PULLS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("pulls", harness.clock.now())
    harness.run_until_finished(run.run_id)

    def count() -> int:
        with harness.store.read() as conn:
            return conn.execute(select(func.count()).select_from(m.task_xcoms)).scalar()

    assert count() == 3
    harness.clock.advance(timedelta(days=1))
    assert harness.store.clean_history(harness.clock.now()).runs == 1
    assert count() == 0


DOCS_EXAMPLE = """
from orchestrator import DAG, task

with DAG("report", schedule=None) as dag:
    @task
    def extract(ti):
        ti.xcom_push("source", {"db": "orders", "rows": 1200})
        return [1, 2, 3]

    @task
    def part(x):
        return x * 10

    @task
    def publish(ti):
        rows = ti.xcom_pull(task_ids="extract")
        source = ti.xcom_pull(task_ids="extract", key="source")
        parts = ti.xcom_pull(task_ids="part")
        second = ti.xcom_pull(task_ids="part", map_indexes=1)
        both = ti.xcom_pull(task_ids=["extract", "part"])
        return {"rows": rows, "source": source, "parts": parts, "second": second, "both": both}

    check = dag.shell("check", "echo {{ ti.xcom_pull(task_ids='extract', key='source') }}")

    extract() >> part.expand(x=[1, 2, 3]) >> publish
    publish >> check
"""


def test_the_docs_example_runs(harness: Harness, write_dag):  # docs/concepts.md
    write_dag("report.py", DOCS_EXAMPLE)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("report", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    assert json.loads(harness.store.results(run.run_id, ["publish"])["publish"]) == {
        "rows": [1, 2, 3],
        "source": {"db": "orders", "rows": 1200},
        "parts": [10, 20, 30],
        "second": 20,
        "both": [[1, 2, 3], [10, 20, 30]],
    }


def test_a_push_is_fenced_to_the_running_try_and_a_retry_reads_only_its_own(store, clock):
    from orchestrator import DAG, task
    from orchestrator.authoring.spec import serialize_dag
    from orchestrator.errors import StateError

    with DAG("fenced", schedule=None, default_retries=1) as dag:

        @task
        def pusher(ctx):
            return None

    store.save_dag(serialize_dag(dag), clock.now())
    store.trigger_run("fenced", clock.now())
    store.start_queued_runs(clock.now())
    store.release_ready(clock.now())
    [one] = store.claim("w", clock.now(), timedelta(seconds=30), limit=1)
    store.push_xcom(one.ti_id, 1, "k", '"try 1"')
    with pytest.raises(StateError, match="try 2 is no longer running"):
        store.push_xcom(one.ti_id, 2, "k", '"not mine"')
    store.finish_failure(one, "boom", 1, clock.now())
    with pytest.raises(StateError, match="try 1 is no longer running"):
        store.push_xcom(one.ti_id, 1, "k", '"late"')  # a stale try's push is dropped
    clock.advance(timedelta(minutes=10))
    store.release_ready(clock.now())
    [two] = store.claim("w", clock.now(), timedelta(seconds=30), limit=1)
    assert two.try_number == 2
    store.finish_success(two, None, clock.now())
    # try 2 pushed nothing: try 1's value is not its result
    assert store.pull_result(two.ti_id, "pusher", "k", None) is None
    assert store.pull_result(two.ti_id, "pusher", "return_value", None) is None


def test_a_backfill_reset_of_a_run_removes_its_pushed_values(harness: Harness, write_dag):
    write_dag("pulls.py", PULLS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    when = harness.clock.now()

    def backfill(**kw) -> dict[str, int]:
        fire = [(when, (when, when))]
        return harness.store.create_backfill(
            "pulls", fire, harness.clock.now(), start=when, end=when, max_active_runs=1, **kw
        )[1]

    def count() -> int:
        with harness.store.read() as conn:
            return conn.execute(select(func.count()).select_from(m.task_xcoms)).scalar()

    assert backfill()["created"] == 1
    [run] = harness.store.list_runs("pulls")
    assert harness.run_until_finished(run.run_id).state == "success"
    assert count() == 3
    assert backfill(reset=True)["cleared"] == 1
    assert count() == 0


RESULTS = """
from orchestrator import DAG, task

with DAG("returns", schedule=None) as dag:
    @task(retries=0)
    def huge():
        return "x" * 70000

    @task(retries=0)
    def odd():
        return {1, 2}
"""


def test_an_oversized_or_non_json_result_names_the_task_the_key_and_the_size(
    harness: Harness, write_dag
):
    write_dag("returns.py", RESULTS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("returns", harness.clock.now())
    harness.run_until_finished(run.run_id)
    huge = harness.store.task_instance(run.run_id, "huge").error
    assert "task 'huge' key 'return_value': return value is 70002 bytes of JSON" in huge
    odd = harness.store.task_instance(run.run_id, "odd").error
    assert "task 'odd' key 'return_value': return value is not JSON-serialisable (set)" in odd


MAPPED_PUSH = """
from orchestrator import DAG, task

with DAG("mapped_push", schedule=None) as dag:
    @task
    def square(x, ti):
        ti.xcom_push("sq", x * x)
        return x

    @task
    def after(ti):
        return [
            ti.xcom_pull(task_ids="square", key="sq"),
            ti.xcom_pull(task_ids="square", key="sq", map_indexes=[2, 0]),
            ti.xcom_pull(task_ids="square", key="sq", map_indexes=1),
        ]

    square.expand(x=[1, 2, 3]) >> after
"""


def test_mapped_instances_push_and_a_pull_picks_them_by_map_index(harness: Harness, write_dag):
    write_dag("mapped_push.py", MAPPED_PUSH)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("mapped_push", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "success"
    got = json.loads(harness.store.results(run.run_id, ["after"])["after"])
    assert got == [[1, 4, 9], [9, 1], 4]


def test_a_file_sensor_pulls_its_path_from_a_task_that_is_not_upstream(
    harness: Harness, write_dag, tmp_path
):
    landed = tmp_path / "landed.csv"
    landed.write_text("1,2\n")
    old = harness.clock.now().timestamp() - 10  # older than the fake clock's now
    os.utime(landed, (old, old))
    write_dag(
        "sense.py",
        f"""
from orchestrator import DAG, task
from orchestrator.sensors import file_sensor

with DAG("sense", schedule=None) as dag:
    @task
    def where():
        return {str(landed)!r}

    @task
    def noop():
        return None

    where() >> noop
    sensor = file_sensor("landed", "{{{{ ti.xcom_pull(task_ids='where') }}}}", poke_interval=30)
    noop >> sensor
""",
    )
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("sense", harness.clock.now())
    for _ in range(5):
        harness.tick()
        harness.worker.run_until_idle()
        harness.tick()
    sensor = harness.store.task_instance(run.run_id, "landed")
    [t] = harness.store.tries(run.run_id, "landed")
    log = Path(harness.settings.log_dir, t.log_path).read_text()
    assert sensor.state == "success", (sensor.state, log)
    assert json.loads(harness.store.results(run.run_id, ["landed"])["landed"]) == [str(landed)]
