"""``run_as_user=`` a worker cannot honour fails the try with the reason (issue 24,
item 1), on both backends; the task's process never starts as the worker's user."""

from __future__ import annotations

from tests.helpers import Harness

DAG = """
from orchestrator import DAG, task

with DAG("who", schedule=None) as dag:
    dag.shell("nobody_here", "echo should not run", run_as_user="no-such-user-24", retries=0)
"""


def test_an_unknown_run_as_user_fails_the_try_naming_it(store, settings, clock, write_dag):
    write_dag("who.py", DAG)
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().errors == 0
        run = store.trigger_run("who", clock.now())
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    [t] = store.tries(run.run_id, "nobody_here")
    assert t.state == "failed"
    assert "run_as_user 'no-such-user-24': no such OS user" in (t.error or "")
