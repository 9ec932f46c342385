"""What each sample of tests/airflow_dags/ gives when a user triggers it, as Airflow's
semantics give it (no Airflow is installed: the outcomes are written here). Read by the
in-process test (tests/integration/test_airflow_dags.py, fake clock) and by the real
`orchestrator standalone` one (tests/system/test_airflow_standalone.py), so the two check
one table.

``EXPECTED[dag_id]`` is a manual run's outcome with ``CONF[dag_id]`` (or no conf): the
run's state, each task's state (a mapped task: its instance 0) or only how many tasks
all succeed, and a few results, as a function of the run (its logical date, run_id).
``ENV`` holds the Variables and Connections the samples read."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import pytest

# one warehouse connection serves the three samples that read it (each checks part of it)
ENV = {
    "ORCHESTRATOR_VAR_LIMITS": '{"max": 7}',
    "ORCHESTRATOR_VAR_REGION": "eu",
    "ORCHESTRATOR_VAR_ENVIRONMENT": "staging",
    "ORCHESTRATOR_VAR_SETTINGS": '{"retries": 4}',
    "ORCHESTRATOR_CONN_WAREHOUSE": "postgresql://etl:pw-secret-9@db.example:6543/sales",
}


def http_conn(port: int) -> dict[str, str]:
    """The connection http_with_connection.py calls: the test's HTTP server on ``port``."""
    return {"ORCHESTRATOR_CONN_API": f"http://bob:s3cret-pw@127.0.0.1:{port}"}


@dataclass(frozen=True)
class Expected:
    """A run's outcome: its ``state`` (None: not checked), its ``tasks`` (task_id ->
    state) or, without them, every task succeeded (``count`` of them, if given);
    ``results(run)`` the results of a few tasks. ``all_succeed=False``: only the results
    and the state are checked."""

    state: str | None = "success"
    tasks: dict[str, str] = field(default_factory=dict)
    count: int | None = None
    results: Callable[[Any], dict[str, Any]] | None = None
    all_succeed: bool = True


def _ds(run: Any) -> str:
    return f"{run.logical_date:%Y-%m-%d}"


def _plus_days(run: Any, days: int) -> str:
    day: date = run.logical_date.date()
    return (day + timedelta(days=days)).isoformat()


def _all(*task_ids: str) -> dict[str, str]:
    return dict.fromkeys(task_ids, "success")


CONF: dict[str, dict[str, Any]] = {
    "sdk_helpers": {"mode": "full"},
    "classic_operators": {"who": "ops"},
    "example_params_trigger_ui": {"names": ["Ana", "Bo"], "german": False},
    "example_params_and_templates": {"x": 7, "table": "customers"},
}

EXPECTED: dict[str, Expected] = {
    "tutorial_taskflow_api": Expected(
        tasks=_all("extract", "transform", "load"),
        results=lambda run: {
            "transform": {"total_order_value": pytest.approx(1236.7)},
            "load": pytest.approx(1236.7),  # the ETL total
        },
    ),
    "sdk_helpers": Expected(
        tasks={
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
            "greet_in_bash": "success",
        },  # Airflow: the leaves decide, and they succeeded
        results=lambda run: {
            "greet_in_bash": f"bash says full on {_ds(run)}",
            # Variable.get("region", default="eu-west-1"): ENV sets it
            "credentials": {"region": "eu", "max": 7, "host": "db.example"},
        },
    ),
    "tutorial": Expected(
        tasks=_all("print_date", "sleep", "templated"),
        results=lambda run: {"templated": _plus_days(run, 7)},  # macros.ds_add(ds, 7)
    ),
    "classic_operators": Expected(
        tasks={
            "print_the_context": "success",
            "sleep_for_0": "success",
            "sleep_for_1": "success",
            "sleep_for_2": "success",
            "templates": "success",
            "branching": "success",
            "branch_a": "skipped",
            "branch_b": "success",
            "join": "success",
            "condition_is_true": "success",
            "true_1": "success",
            "true_2": "success",
            "condition_is_false": "success",
            "false_1": "skipped",
            "false_2": "skipped",
            "bash_env": "success",
            "skipped_by_exit": "skipped",  # exit 99: skip_on_exit_code
            "bashism": "success",  # run by bash, as Airflow runs it
            "uses_output": "success",
            "add_one": "success",
            "echoes": "success",
            "hello": "success",
        },
        results=lambda run: {
            "print_the_context": "Whatever you return gets printed in the logs",
            "sleep_for_2": pytest.approx(0.4),
            "templates": f"{run.logical_date:%Y%m%d}",
            "bash_env": f"day={_ds(run)} in /tmp",
            "uses_output": f"DAY={_ds(run)} IN /TMP",
            "bashism": f"next {_ds(run)}",
            "hello": f"Hello ops on {_ds(run)}",
            "add_one": [2, 3, 4],  # the mapped PythonOperator's instances, in order
            "echoes": ["one", "two"],
        },
    ),
    "example_trigger_controller_dag": Expected(tasks=_all("test_trigger_dagrun")),
    "example_trigger_target_dag": Expected(
        results=lambda run: {
            "run_this": "Hello World",
            "bash_task": "Here is the message: Hello World",
        },
    ),
    "example_http_operator": Expected(
        state="failed",
        tasks={
            "http_sensor_check": "success",
            "post_op": "success",
            "get_op": "success",
            "bad_status": "failed",  # a 500 fails the task, as HttpHook's check_response does
        },
        results=lambda run: {
            "post_op": json.dumps({"echo": '{"priority": 5}', "path": "/post"}),
            "get_op": f"/get/{_ds(run)}",  # response_filter
        },
    ),
    # a manual run is never skipped by LatestOnlyOperator
    "latest_only_with_trigger": Expected(
        tasks=_all("latest_only", "task1", "task2", "task3", "task4")
    ),
    "example_sensors": Expected(
        tasks={
            "wait_some_seconds": "success",
            "wait_some_seconds_async": "success",
            "fire_immediately": "success",
            "timeout_after_second_date_in_the_future": "skipped",  # soft_fail on its timeout
            "wait_for_data_interval_end": "success",
            "create_file_after_3_seconds": "success",
            "wait_for_file": "success",
            "success_sensor_python": "success",
            "failure_timeout_sensor_python": "skipped",  # soft_fail on its timeout
            "print_date_in_bash": "success",  # none_failed
        },
    ),
    "example_external_task_marker_parent": Expected(tasks=_all("parent_task")),
    "example_external_task_marker_child": Expected(
        tasks=_all("child_task1", "wait_for_upstream", "custom", "child_task2"),
        results=lambda run: {"wait_for_upstream": "xcom_value"},
    ),
    "example_dynamic_task_mapping": Expected(
        results=lambda run: {"add_one": [2, 3, 4], "sum_it": 9}
    ),
    "example_task_mapping_second_order": Expected(
        results=lambda run: {"times_2": [2, 4, 6], "add_10": [12, 14, 16]}
    ),
    "example_callback": Expected(
        state="failed", tasks=_all("task1", "task2", "task3") | {"task4": "failed"}
    ),
    "example_setup_teardown_taskflow": Expected(
        count=9,
        results=lambda run: {
            "outer_teardown": "some cluster id",
            "section_1.inner_teardown": "some_cluster_id",
        },
    ),
    "example_task_group": Expected(count=9),
    "example_branch_labels": Expected(count=7),
    "example_xcom": Expected(
        results=lambda run: {
            "bash_push": "value_by_return",
            "bash_pull": None,  # do_xcom_push=False
            "pull_value_from_bash_push": "value_by_return",
            "puller": [[1, 2, 3], {"a": "b"}],
        },
    ),
    "example_task_group_mapping": Expected(
        results=lambda run: {"op.mul_two": [4, 6, 8], "add_all": 18}
    ),
    "example_task_group_mapping_files": Expected(  # one file fails to convert: the test
        state=None,
        all_succeed=False,
        results=lambda run: {
            "summary": ["data/input.yaml", "data/input2.yaml"],
            "file_transforms.report": [
                "data/input.csv done in instance 0",
                "data/input2.csv done in instance 1",
                "data/bad.csv done in instance 2",
            ],
        },
    ),
    "example_trigger_rules": Expected(
        state="failed",  # a leaf (all_success, some_failed) is upstream_failed
        tasks={
            "succeeds": "success",
            "fails": "failed",
            "skips": "skipped",  # AirflowSkipException
            "all_success": "upstream_failed",
            "after_skip": "skipped",  # a skip propagates through all_success
            "cleanup": "success",  # all_done
            "alert_on_failure": "success",  # one_failed
            "no_failure_no_alert": "skipped",  # one_failed, nothing failed
            "one_success": "success",
            "all_failed": "success",
            "not_all_failed": "skipped",  # all_failed with a success upstream
            "none_failed": "success",  # a skip is no failure
            "some_failed": "upstream_failed",
            "none_skipped": "skipped",
            "none_skipped_2": "success",  # a failure is no skip
            "none_failed_min_one_success": "skipped",  # no success at all
            "all_skipped": "success",
            "always": "success",
            "one_done": "success",
        },
        results=lambda run: {"cleanup": "cleaned up"},
    ),
    "example_short_circuit_decorator": Expected(
        tasks={
            "condition_is_true": "success",
            "true_1": "success",
            "true_2": "success",
            "condition_is_false": "success",  # the short circuit itself succeeds
            "false_1": "skipped",
            "false_2": "skipped",
            "task_1": "success",
            "task_2": "success",
            "short_circuit": "success",
            "task_3": "success",
            "task_4": "skipped",  # the direct downstream of the short circuit
            "task_5": "success",
            "task_6": "skipped",  # all_success over a skipped upstream
            "task_7": "success",  # all_done: ignore_downstream_trigger_rules=False respects it
        },
    ),
    "example_mapped_classic_operators": Expected(
        results=lambda run: {
            "count": ["1", "2", "3"],
            "greet": ["hello alpha", "hello beta"],
            "dated": [f"{_ds(run)} a", f"{_ds(run)} b"],  # partial's env, per instance
            "add": [11, 12],
            "collect": {"sum": 6, "greetings": ["hello alpha", "hello beta"]},
        },
    ),
    "example_variables_connections_macros": Expected(
        results=lambda run: {
            "in_templates": (
                f"{_ds(run)} {_plus_days(run, 1)} {run.logical_date:%d/%m/%Y}"
                " staging 4 db.example:6543/sales"
            ),
            "in_code": {
                "environment": "staging",
                "retries": 4,
                "missing": "fallback",  # Variable.get(..., default=...)
                "conn": ["postgres", "db.example", 6543, "etl", "sales"],
            },
            "with_macros": {
                "yesterday": _plus_days(run, -1),
                "ds_nodash": f"{run.logical_date:%Y%m%d}",
            },
            "templates_dict": {"environment": "staging", "week": f"{run.logical_date:%G-W%V}"},
        },
    ),
    "example_skip_dag": Expected(
        tasks={
            "skip_operator_1": "skipped",  # raise AirflowSkipException
            "always_true_1": "success",
            "all_success": "skipped",  # a skipped upstream skips all_success
            "final_1": "skipped",
            "skip_operator_2": "skipped",
            "always_true_2": "success",
            "one_success": "success",
            "final_2": "success",
        },  # skipped leaves do not fail a run
    ),
    "example_params_trigger_ui": Expected(
        tasks={
            "select_languages": "success",
            "get_names": "success",
            "generate_english_greeting": "success",
            "generate_german_greeting": "skipped",  # the branch did not follow it
            "generate_french_greeting": "success",
            "print_greetings": "success",  # all_done
        },
        results=lambda run: {
            "generate_english_greeting": ["Hello Ana!", "Hello Bo!"],
            "generate_french_greeting": ["Bonjour Ana!", "Bonjour Bo!"],
        },
    ),
    "example_params_and_templates": Expected(
        results=lambda run: {
            "also_run_this": f"customers {_plus_days(run, 1)} eu db.example",
            "env_var_test_task": "x is 14",
        },
    ),
    "example_python_operator": Expected(
        results=lambda run: {
            "virtualenv_python": {"in": "a virtualenv"},
            "external_python": {"sum": 21, "version": list(sys.version_info[:2])},
            "doubled": 42,
        },
    ),
    "asset_produces_2": Expected(tasks=_all("producing_task_2")),
    "hourly_report": Expected(tasks=_all("wait_for_ingest", "wait_for_two")),
}

# example_sensors_reschedule after each sensor's first poke (mode="reschedule"), before
# its file, flag and upstream run exist, at 00:00 of the run's day (its TimeSensor waits
# for 00:30); all_met has not run
FIRST_POKES = {
    "wait_for_file": "up_for_reschedule",  # no file yet
    "wait_half_an_hour": "up_for_reschedule",  # 30 minutes after the interval
    "half_past_midnight": "up_for_reschedule",  # 00:30 of the interval's last day
    "past_date": "success",  # its target is the data interval's end: passed
    "date_far_ahead": "up_for_reschedule",
    "wait_for_flag": "up_for_reschedule",
    "api_is_up": "success",  # 200 and the response_check holds
    "never_found": "up_for_reschedule",  # a 404 is "not yet"
    "wait_for_upstream": "up_for_reschedule",  # no run of the other DAG yet
}


def check_run(store: Any, run: Any, dag_id: str | None = None) -> None:
    """Assert that ``run`` (a RunRecord, read from ``store``), its task instances and the
    results of its tasks are the outcome EXPECTED gives its DAG (or ``dag_id``)."""
    expected = EXPECTED[dag_id or run.dag_id]
    instances = store.task_instances(run.run_id)
    errors = {t.task_id: t.error for t in instances if t.error}
    if expected.state is not None:
        assert run.state == expected.state, (run.dag_id, run.state, errors)
    states = {t.task_id: str(t.state) for t in instances if t.map_index <= 0}
    if expected.tasks:
        assert states == expected.tasks, (run.dag_id, states, errors)
    elif expected.all_succeed:
        assert states == dict.fromkeys(states, "success"), (run.dag_id, errors)
        assert expected.count in (None, len(states)), (run.dag_id, sorted(states))
    if expected.results is not None:
        wanted = expected.results(run)
        raw = store.results(run.run_id, list(wanted))
        got = {k: (json.loads(v) if v is not None else None) for k, v in raw.items()}
        assert got == wanted, (run.dag_id, got, wanted)
