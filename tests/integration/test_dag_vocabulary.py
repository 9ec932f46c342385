"""Airflow's DAG vocabulary on both backends (issue 25 item 4): a @dag DAG with
default_args retried and its function parameter read as a param; catchup."""

from __future__ import annotations

import json
from datetime import timedelta

from orchestrator.states import TaskState
from tests.helpers import Harness

ORDERS = """
import os
from datetime import datetime, timedelta
from orchestrator import dag, task

@dag(schedule=None, start_date=datetime(2026, 1, 1), catchup=False, tags=["etl"],
     doc_md="Loads **orders**.",
     default_args={"owner": "data", "retries": 1, "retry_delay": timedelta(seconds=1),
                   "retry_exponential_backoff": False})
def orders(limit=10):
    @task
    def flaky(ti):
        if ti.try_number == 1:
            raise RuntimeError("first try fails")
        return ti.try_number

    @task
    def load(limit, tries):
        return {"limit": limit, "tries": tries}

    load(limit, flaky())

orders()
"""


def test_a_dag_decorated_dag_runs_with_default_args_and_its_param(harness: Harness, write_dag):
    write_dag("orders.py", ORDERS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    spec = harness.store.spec("orders", harness.store.get_dag("orders").version_hash)
    assert spec.tags == ("etl",) and spec.doc_md == "Loads **orders**."
    assert spec.tasks["flaky"].retries == 1 and spec.misfire == "coalesce"
    run = harness.store.trigger_run("orders", harness.clock.now(), conf={"limit": 25})
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    by_id = {t.task_id: t for t in harness.store.task_instances(run.run_id)}
    assert by_id["flaky"].state == TaskState.SUCCESS and by_id["flaky"].try_number == 2
    assert json.loads(harness.store.results(run.run_id, ["load"])["load"]) == {
        "limit": 25,
        "tries": 2,
    }


CATCHUP = """
from datetime import datetime, timedelta, timezone
from orchestrator import DAG, task

for name, catchup in (("caught_up", True), ("latest_only", False)):
    with DAG(name, schedule=timedelta(hours=1), catchup=catchup,
             start_date=datetime(2025, 12, 31, 20, tzinfo=timezone.utc)) as dag:
        @task
        def only(ctx):
            return 1
"""


def test_catchup_true_runs_every_missed_fire_time_and_false_only_the_latest(
    harness: Harness, write_dag
):
    write_dag("catchup.py", CATCHUP)
    assert harness.parse().dags == 2, harness.store.import_errors()
    for _ in range(6):
        harness.tick()
        harness.clock.advance(timedelta(seconds=1))
    caught_up = harness.store.list_runs("caught_up")
    latest = harness.store.list_runs("latest_only")
    # 20:00 .. 00:00 were missed: each gets its run; without catchup only the latest
    assert sorted(r.logical_date.hour for r in caught_up) == [0, 20, 21, 22, 23]
    assert [r.logical_date.hour for r in latest] == [0]


CALLBACKS = """
import json
from orchestrator import DAG, task

OUT = {out!r}

def record(name, value):
    try:
        seen = json.load(open(OUT))
    except FileNotFoundError:
        seen = {{}}
    seen[name] = value
    json.dump(seen, open(OUT, "w"))

def succeeded(context):
    record("success", [context["ti"].task_id, context["dag_run"].run_id == context.run_id,
                       context["ds"], context.task_id])

def failed(context):
    record("failure", [context["ti"].task_id, type(context["exception"]).__name__,
                       "boom" in str(context["exception"]), context["kind"]])

with DAG("callbacks", schedule=None,
         default_args={{"on_success_callback": succeeded, "on_failure_callback": failed}}) as dag:
    @task
    def fine():
        return 1

    @task
    def boom():
        raise RuntimeError("boom")
"""


def test_callbacks_get_an_airflow_shaped_context(harness: Harness, write_dag, settings, tmp_path):
    from orchestrator.observability.alerts.delivery import AlertDelivery
    from orchestrator.observability.alerts.watchdog import AlertWatchdog

    out = tmp_path / "seen.json"
    write_dag("callbacks.py", CALLBACKS.format(out=str(out)))
    assert harness.parse().dags == 1, harness.store.import_errors()
    watchdog = AlertWatchdog(harness.store, settings)
    delivery = AlertDelivery(harness.store, settings)
    watchdog.check(harness.clock.now())
    run = harness.store.trigger_run("callbacks", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    watchdog.check(harness.clock.now())
    delivery.tick(harness.clock.now())
    seen = json.loads(out.read_text())
    day = harness.clock.now().strftime("%Y-%m-%d")
    assert seen["success"] == ["fine", True, day, "fine"]
    assert seen["failure"] == ["boom", "CallbackFailure", True, "task_dead_lettered"]
