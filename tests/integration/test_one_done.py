"""one_done end to end (issue 13, item 13): as in Airflow, only an upstream task's own
success or failure releases it; an upstream_failed upstream is no outcome, so the task
waits while another upstream task still runs and is skipped once all have finished."""

from __future__ import annotations

DAG_SOURCE = """
from orchestrator import DAG, task

with DAG("one_done", schedule=None) as dag:
    @task
    def boom():
        raise RuntimeError("boom")

    @task
    def after_boom():  # all_success: becomes upstream_failed
        return 1

    @task(trigger_rule="one_done")
    def only_upstream_failed():
        return "ran"

    @task(trigger_rule="one_done")
    def failed_or_not():  # boom failed: a failure of its own, so this runs
        return "ran"

    boom >> after_boom >> only_upstream_failed
    boom >> failed_or_not
"""


def test_one_done_skips_when_every_upstream_was_only_upstream_failed(harness, write_dag):
    write_dag("one_done.py", DAG_SOURCE)
    harness.parse()
    run = harness.store.trigger_run("one_done", harness.clock.now())
    harness.run_until_finished(run.run_id)
    states = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    assert states == {
        "boom": "failed",
        "after_boom": "upstream_failed",
        "only_upstream_failed": "skipped",
        "failed_or_not": "success",
    }
