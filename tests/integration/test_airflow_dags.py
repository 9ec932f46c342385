"""Airflow-style DAG files (tests/airflow_dags/, written as Airflow's docs and tutorials
write them, with only their imports changed to ``orchestrator.airflow``) parsed and run
to the end on both backends, with the task states and results Airflow's semantics give
(issue 26 item 1). No Airflow is installed: the expected outcomes are written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.states import TaskState
from tests.helpers import Harness

SAMPLES = Path(__file__).resolve().parents[1] / "airflow_dags"


def _load(harness: Harness, write_dag, *names: str) -> None:
    for name in names:
        write_dag(name, (SAMPLES / name).read_text())
    result = harness.parse()
    assert not harness.store.import_errors(), harness.store.import_errors()
    assert result.dags >= len(names)


def _run(harness: Harness, dag_id: str, conf: dict | None = None):
    run = harness.store.trigger_run(dag_id, harness.clock.now(), conf=conf or {})
    run = harness.run_until_finished(run.run_id)
    states = {t.task_id: t for t in harness.store.task_instances(run.run_id)}
    return run, states


def _results(harness: Harness, run_id: str, task_ids: list[str]) -> dict:
    raw = harness.store.results(run_id, task_ids)
    return {k: (json.loads(v) if v is not None else None) for k, v in raw.items()}


def test_the_taskflow_tutorial_runs_extract_transform_load(harness: Harness, write_dag):
    _load(harness, write_dag, "tutorial_taskflow_api.py")
    run, tis = _run(harness, "tutorial_taskflow_api")
    assert run.state == "success"
    assert {t: ti.state for t, ti in tis.items()} == dict.fromkeys(
        ("extract", "transform", "load"), TaskState.SUCCESS
    )
    out = _results(harness, run.run_id, ["transform", "load"])
    assert out["transform"] == {"total_order_value": pytest.approx(1236.7)}
    assert out["load"] == pytest.approx(1236.7)


def test_sdk_helpers_branch_short_circuit_exceptions_credentials_and_groups(
    harness: Harness, write_dag, monkeypatch
):
    monkeypatch.setenv("ORCHESTRATOR_VAR_LIMITS", '{"max": 7}')
    monkeypatch.setenv("ORCHESTRATOR_CONN_WAREHOUSE", "postgresql://u:secret-pw@db.example:5432/w")
    _load(harness, write_dag, "sdk_helpers.py")
    run, tis = _run(harness, "sdk_helpers", {"mode": "full"})
    states = {t: str(ti.state) for t, ti in tis.items()}
    assert states == {
        "create_workdir": "success",
        "which_day": "success",
        "pick": "success",
        "full_load": "success",
        "delta_load": "skipped",  # the branch not taken
        "join": "success",  # none_failed_min_one_success over a skipped branch
        "has_rows": "success",  # the short circuit itself succeeds
        "never_runs": "skipped",  # ... and skips what follows it
        "skip_me": "skipped",  # AirflowSkipException
        "fail_fast": "failed",  # AirflowFailException: no retry, whatever retries says
        "credentials": "success",  # all_done
        "report_group.a": "success",
        "report_group.b": "success",
        "report_group.c": "success",
        "report_group.d": "success",
        "remove_workdir": "success",  # the teardown
    }
    assert tis["fail_fast"].try_number == 1
    assert run.state == "success"  # Airflow: the leaves decide, and they succeeded
    out = _results(harness, run.run_id, ["which_day", "credentials", "pick"])
    assert out["which_day"]["ds"] == run.logical_date.strftime("%Y-%m-%d")
    assert out["which_day"]["run_id"] == run.run_id
    assert out["credentials"] == {"region": "eu-west-1", "max": 7, "host": "db.example"}
    spec = harness.store.spec("sdk_helpers", harness.store.get_dag("sdk_helpers").version_hash)
    assert spec.tasks["fail_fast"].retries == 3 and spec.tasks["join"].retries == 1
