"""Two real worker processes start two tries that need one virtualenv at the same time:
it is built once (one waits on the other's lock), and both tries run in it."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.engine.processor import DagProcessor
from orchestrator.engine.venv_cache import MARKER, venv_key
from tests.system.cluster import cluster, wait_for

pytestmark = pytest.mark.system


def test_two_workers_build_one_virtualenv_once(store, settings, write_dag, tmp_path):
    write_dag(
        "twins.py",
        """
        from orchestrator import DAG, task

        with DAG("twins", schedule=None) as dag:
            @task.virtualenv(requirements=["tabulate==0.10.0"])
            def left():
                import tabulate

                return tabulate.__version__

            @task.virtualenv(requirements=["tabulate==0.10.0"])
            def right():
                import tabulate

                return tabulate.__version__
        """,
    )
    assert DagProcessor(store, settings).scan(datetime.now(UTC)).dags == 1
    run = store.trigger_run("twins", datetime.now(UTC))
    with cluster(settings, tmp_path, ORCHESTRATOR_SCHEDULER_INTERVAL="0.2") as c:
        c.start("scheduler")
        c.start("worker", "--concurrency", "1")
        c.start("worker", "--concurrency", "1")
        wait_for(
            lambda: store.get_run(run.run_id).state in ("success", "failed"),
            "the run to finish",
            timeout=240,
        )
        assert store.get_run(run.run_id).state == "success", c.logs()
    assert store.results(run.run_id, ["left", "right"]) == {"left": '"0.10.0"', "right": '"0.10.0"'}
    tries = [store.tries(run.run_id, t)[-1] for t in ("left", "right")]
    assert len({t.worker for t in tries}) == 2  # one try on each worker, at the same time
    logs = "".join((Path(settings.log_dir) / t.log_path).read_text() for t in tries)
    key = venv_key(sys.executable, ["tabulate==0.10.0"], False)
    assert logs.count(f"building virtual environment {key} with") == 1, logs
    assert (Path(settings.state_dir) / "venvs" / key / MARKER).is_file()
