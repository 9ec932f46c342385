"""Airflow DAG files (tests/airflow_dags/, written as Airflow's docs, tutorials and example
DAGs write them, with Airflow's own import lines) ported by the real ``orchestrator dags
port --write``, then parsed and run to the end on both backends, with the task states and
results Airflow's semantics give (issue 26). No Airflow is installed: the expected
outcomes are written in tests/airflow_expectations.py, which
tests/system/test_airflow_standalone.py checks on a real standalone too."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from orchestrator.states import TaskState
from tests.airflow_expectations import CONF, ENV, FIRST_POKES, check_run, http_conn
from tests.helpers import Harness

SAMPLES = Path(__file__).resolve().parents[1] / "airflow_dags"


@pytest.fixture(autouse=True)
def _variables_and_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Variables and Connections the samples read (ORCHESTRATOR_VAR_/CONN_)."""
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


def _port(paths: list[Path]) -> list[dict]:
    """``orchestrator dags port PATH... --write --json`` as a user runs it."""
    from orchestrator.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["dags", "port", *map(str, paths), "--write", "--json"])
    reports = json.loads(out.getvalue())
    assert code == 0, reports
    return reports


def _load(harness: Harness, write_dag, *names: str) -> None:
    """Copy Airflow's files into the dags folder, port them, then parse the result."""
    paths = []
    for name in names:
        source = (SAMPLES / name).read_text()
        assert "\nfrom airflow" in source and "orchestrator" not in source, name
        paths.append(write_dag(name, source))
    for report in _port(paths):
        assert report["verdict"] in ("ported", "ported with warnings"), report
        assert report["written"] and report["problems"] == [], report
    for path in paths:
        text = path.read_text()
        assert "\nfrom airflow" not in text and "\nfrom orchestrator.airflow import" in text
    result = harness.parse()
    assert not harness.store.import_errors(), harness.store.import_errors()
    assert result.dags >= len(names)


def _run(harness: Harness, dag_id: str, conf: dict | None = None):
    run = harness.store.trigger_run(dag_id, harness.clock.now(), conf=conf or {})
    run = harness.run_until_finished(run.run_id)
    instances = harness.store.task_instances(run.run_id)
    return run, {t.task_id: t for t in instances if t.map_index <= 0}  # a mapped one: [0]


def _results(harness: Harness, run_id: str, task_ids: list[str]) -> dict:
    raw = harness.store.results(run_id, task_ids)
    return {k: (json.loads(v) if v is not None else None) for k, v in raw.items()}


def test_the_taskflow_tutorial_runs_extract_transform_load(harness: Harness, write_dag):
    _load(harness, write_dag, "tutorial_taskflow_api.py")
    run, _ = _run(harness, "tutorial_taskflow_api")
    check_run(harness.store, run)


def test_sdk_helpers_branch_short_circuit_exceptions_credentials_and_groups(
    harness: Harness, write_dag
):
    _load(harness, write_dag, "sdk_helpers.py")
    run, tis = _run(harness, "sdk_helpers", CONF["sdk_helpers"])
    check_run(harness.store, run)
    assert tis["fail_fast"].try_number == 1
    out = _results(harness, run.run_id, ["which_day"])
    assert out["which_day"]["ds"] == run.logical_date.strftime("%Y-%m-%d")
    assert out["which_day"]["run_id"] == run.run_id
    spec = harness.store.spec("sdk_helpers", harness.store.get_dag("sdk_helpers").version_hash)
    assert spec.tasks["fail_fast"].retries == 3 and spec.tasks["join"].retries == 1


def test_the_fundamentals_tutorial_runs_its_bash_operators_with_templates(
    harness: Harness, write_dag
):
    _load(harness, write_dag, "tutorial.py")
    spec = harness.store.spec("tutorial", harness.store.get_dag("tutorial").version_hash)
    assert spec.tasks["sleep"].retries == 3 and spec.tasks["print_date"].retries == 1
    assert spec.tasks["print_date"].doc_md.startswith("#### Task Documentation")
    run, _ = _run(harness, "tutorial")
    check_run(harness.store, run)  # templated's last line of output: macros.ds_add(ds, 7)


def test_classic_operators_run_as_airflow_runs_them(harness: Harness, write_dag):
    _load(harness, write_dag, "classic_operators.py")
    run, _ = _run(harness, "classic_operators", CONF["classic_operators"])
    check_run(harness.store, run)
    mapped = [t for t in harness.store.task_instances(run.run_id) if t.map_index >= 0]
    assert sorted((t.task_id, t.map_index, str(t.state)) for t in mapped) == [
        ("add_one", 0, "success"), ("add_one", 1, "success"), ("add_one", 2, "success"),
        ("echoes", 0, "success"), ("echoes", 1, "success"),
    ]  # fmt: skip


def test_trigger_dag_run_operator_starts_the_target_and_waits_for_it(harness: Harness, write_dag):
    _load(harness, write_dag, "example_trigger_controller_dag.py", "example_trigger_target_dag.py")
    run, _ = _run(harness, "example_trigger_controller_dag")
    check_run(harness.store, run)
    [target] = harness.store.list_runs("example_trigger_target_dag")
    check_run(harness.store, target)
    assert target.conf == {"message": "Hello World"}
    assert target.logical_date == run.logical_date  # the triggering run's logical date


def test_http_operator_and_sensor_reach_the_host_of_their_connection(
    harness: Harness, write_dag, monkeypatch
):
    from tests.integration.test_http_tasks import Server

    server = Server()
    try:
        for key, value in http_conn(server.port).items():
            monkeypatch.setenv(key, value)
        _load(harness, write_dag, "http_with_connection.py")
        run, _ = _run(harness, "example_http_operator")
    finally:
        server.close()
    check_run(harness.store, run)
    post = next(r for r in server.requests if r["path"] == "/post")
    assert post["method"] == "POST" and post["headers"]["Content-Type"] == "application/json"
    assert post["headers"]["Authorization"].startswith("Basic ")  # the connection's login
    get = next(r for r in server.requests if r["path"].startswith("/get/"))
    assert get["method"] == "GET" and get["query"] == {"param1": ["value1"], "param2": ["value2"]}
    error = harness.store.task_instance(run.run_id, "bad_status").error
    assert "500" in error and "s3cret-pw" not in error


def test_latest_only_skips_an_old_scheduled_run_and_never_a_manual_one(harness: Harness, write_dag):
    _load(harness, write_dag, "latest_only_with_trigger.py")
    harness.tick()  # catchup=False: one scheduled run, for the latest fire time of the fake
    [scheduled] = harness.store.list_runs("latest_only_with_trigger")  # clock, long past now
    scheduled = harness.run_until_finished(scheduled.run_id)
    tis = {t.task_id: str(t.state) for t in harness.store.task_instances(scheduled.run_id)}
    assert tis == {
        "latest_only": "success",
        "task1": "skipped",
        "task2": "success",
        "task3": "skipped",
        "task4": "success",  # all_done
    }
    run, _ = _run(harness, "latest_only_with_trigger")
    check_run(harness.store, run)


def test_example_sensors_wait_time_out_softly_and_meet_their_conditions(
    harness: Harness, write_dag, dags_dir
):
    _load(harness, write_dag, "example_sensors.py")
    run, tis = _run(harness, "example_sensors")
    check_run(harness.store, run)
    assert (dags_dir / "temporary_file_for_testing").exists()
    assert tis["failure_timeout_sensor_python"].try_number == 1  # no retry after a timeout
    out = _results(harness, run.run_id, ["wait_for_file"])
    assert [Path(p).name for p in out["wait_for_file"]] == ["temporary_file_for_testing"]


def test_external_task_sensor_waits_for_the_parent_and_sensors_pass_values(
    harness: Harness, write_dag
):
    _load(harness, write_dag, "example_external_task.py")
    now = harness.clock.now()
    child = harness.store.trigger_run("example_external_task_marker_child", now)
    harness.tick()
    harness.worker.run_until_idle()
    harness.tick()
    waiting = harness.store.task_instance(child.run_id, "child_task1")
    assert str(waiting.state) == "up_for_reschedule"  # no parent run yet: it waits
    parent = harness.store.trigger_run("example_external_task_marker_parent", now)
    child = harness.run_until_finished(child.run_id)
    assert harness.store.get_run(parent.run_id).state == "success"
    check_run(harness.store, child)


def test_the_whole_folder_ports_with_one_command_and_parses(
    harness: Harness, write_dag, dags_dir, capsys
):
    """Issue 26's "done when": 25+ Airflow files, `dags port FOLDER --write` ports each."""
    from orchestrator.cli import main

    names = sorted(p.name for p in SAMPLES.glob("*.py"))
    assert len(names) >= 25
    for name in names:
        write_dag(name, (SAMPLES / name).read_text())
    assert (
        "from airflow.sdk import dag, task" in (dags_dir / "tutorial_taskflow_api.py").read_text()
    )
    before = {n: (dags_dir / n).read_text() for n in names}
    assert main(["dags", "port", str(dags_dir)]) == 0  # no --write: reports, changes nothing
    assert {n: (dags_dir / n).read_text() for n in names} == before
    capsys.readouterr()
    assert main(["dags", "port", str(dags_dir), "--write"]) == 0
    out = capsys.readouterr().out
    for name in names:
        assert f"{dags_dir / name}: ported" in out, name
        text = (dags_dir / name).read_text()
        assert "\nfrom airflow" not in text and "\nfrom orchestrator.airflow import" in text
    assert out.count("written)") == len(names)
    result = harness.parse()
    assert not harness.store.import_errors(), harness.store.import_errors()
    assert result.dags >= len(names)


def test_dynamic_task_mapping_examples_map_and_reduce(harness: Harness, write_dag):
    _load(harness, write_dag, "example_dynamic_task_mapping.py")
    for dag_id in ("example_dynamic_task_mapping", "example_task_mapping_second_order"):
        run, _ = _run(harness, dag_id)
        check_run(harness.store, run)


def test_asset_conditions_start_the_consumers_their_events_satisfy(harness: Harness, write_dag):
    _load(harness, write_dag, "example_assets.py")
    consumers = (
        "asset_consumes_1",
        "consume_1_and_2_with_asset_expressions",
        "consume_1_or_2_with_asset_expressions",
        "consume_1_or_both_2_and_3_with_asset_expressions",
    )

    def runs_of() -> dict[str, int]:
        harness.tick()
        return {c: len(harness.store.list_runs(c)) for c in consumers}

    assert runs_of() == dict.fromkeys(consumers, 0)
    run, _ = _run(harness, "asset_produces_1")
    assert run.state == "success"
    assert runs_of() == {
        "asset_consumes_1": 1,
        "consume_1_and_2_with_asset_expressions": 0,  # waits for dag2's asset too
        "consume_1_or_2_with_asset_expressions": 1,
        "consume_1_or_both_2_and_3_with_asset_expressions": 1,
    }
    run, _ = _run(harness, "asset_produces_2")
    assert run.state == "success"
    after = runs_of()
    assert after["consume_1_and_2_with_asset_expressions"] == 1  # both events are there now
    assert after["consume_1_or_2_with_asset_expressions"] == 2
    assert after["consume_1_or_both_2_and_3_with_asset_expressions"] == 1  # 3 never came
    for consumer in consumers:
        for r in harness.store.list_runs(consumer):
            assert harness.run_until_finished(r.run_id).state == "success"


def test_params_catchup_and_credentials_in_templates(harness: Harness, write_dag):
    _load(harness, write_dag, "example_params_and_templates.py")
    harness.tick()  # catchup=True: a run for every daily fire time since the start date
    runs = sorted(
        harness.store.list_runs("example_params_and_templates"), key=lambda r: r.logical_date
    )
    days = [r.logical_date.strftime("%Y-%m-%d") for r in runs]
    assert days[:3] == ["2025-12-29", "2025-12-30", "2025-12-31"]
    for r in runs:
        assert harness.run_until_finished(r.run_id).state == "success"
    first = _results(harness, runs[0].run_id, ["run_this", "also_run_this", "env_var_test_task"])
    assert first == {
        "run_this": {"x": 5, "task": "run_this", "tomorrow": None},
        "also_run_this": "orders 2025-12-30 eu db.example",
        "env_var_test_task": "x is 10",
    }
    manual, _ = _run(harness, "example_params_and_templates", CONF["example_params_and_templates"])
    check_run(harness.store, manual)
    from orchestrator.errors import ParamValidationError

    with pytest.raises(ParamValidationError, match="x"):  # the schema: minimum 3
        harness.store.trigger_run(
            "example_params_and_templates", harness.clock.now(), conf={"x": 1}
        )


def test_callbacks_get_airflows_context_a_list_of_them_too(
    harness: Harness, write_dag, dags_dir, settings
):
    from orchestrator.observability.alerts.delivery import AlertDelivery
    from orchestrator.observability.alerts.watchdog import AlertWatchdog

    _load(harness, write_dag, "example_callbacks.py")
    watchdog, delivery = (
        AlertWatchdog(harness.store, settings),
        AlertDelivery(harness.store, settings),
    )
    watchdog.check(harness.clock.now())
    run, _ = _run(harness, "example_callback")
    check_run(harness.store, run)
    watchdog.check(harness.clock.now())
    while delivery.tick(harness.clock.now()):
        pass
    lines = [json.loads(x) for x in (dags_dir / "callbacks.jsonl").read_text().splitlines()]
    got = sorted((x["kind"], x["task"]) for x in lines)
    assert got == [
        ("dag_failure", None),  # a DAG's failure: no task instance
        ("task_failure", "task4"),
        ("task_success", "task3"),  # both callbacks of the list, in the try's process
        ("task_success_2", "task3"),
    ]
    assert {x["run_id"] for x in lines} == {run.run_id}


LAST_LINES = """
from orchestrator import DAG

with DAG("lines", schedule=None) as dag:
    dag.shell("secret", 'echo first; echo "token={{ var.value.api_token }}"; echo',
              output_last_line=True)
    dag.shell("huge", "head -c 70000 /dev/zero | tr '\\\\0' x; echo", output_last_line=True)
    dag.shell("silent", "true", output_last_line=True)
    dag.shell("plain", "echo not a result")
"""


def test_a_shell_tasks_last_line_is_its_result_masked_and_bounded(
    harness: Harness, write_dag, monkeypatch
):
    monkeypatch.setenv("ORCHESTRATOR_VAR_API_TOKEN", "tok-very-secret-123")
    write_dag("lines.py", LAST_LINES)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run, tis = _run(harness, "lines")
    states = {t: str(ti.state) for t, ti in tis.items()}
    assert states == {
        "secret": "success",
        "huge": "failed",
        "silent": "success",
        "plain": "success",
    }
    out = _results(harness, run.run_id, ["secret", "silent", "plain"])
    assert out == {"secret": "token=***", "silent": None, "plain": None}
    assert "over the 65536-byte limit (max_result_bytes)" in tis["huge"].error


def test_setup_teardown_taskflow_example_runs_its_scopes(harness: Harness, write_dag):
    _load(harness, write_dag, "example_setup_teardown_taskflow.py")
    spec = harness.store.spec(
        "example_setup_teardown_taskflow",
        harness.store.get_dag("example_setup_teardown_taskflow").version_hash,
    )
    # `with outer_teardown(outer_setup()): outer_work()` puts outer_work between them
    assert spec.tasks["outer_work"].upstream == ("outer_setup",)
    assert "outer_work" in spec.tasks["outer_teardown"].upstream
    run, _ = _run(harness, "example_setup_teardown_taskflow")
    check_run(harness.store, run)


def test_task_group_branch_labels_and_xcom_examples(harness: Harness, write_dag):
    _load(harness, write_dag, "example_task_group.py", "example_branch_labels.py")
    for dag_id in ("example_task_group", "example_branch_labels", "example_xcom"):
        run, _ = _run(harness, dag_id)
        check_run(harness.store, run)


def test_virtualenv_and_external_python_operators_run_their_callables(harness: Harness, write_dag):
    _load(harness, write_dag, "example_python_venv.py")
    run, _ = _run(harness, "example_python_operator")
    check_run(harness.store, run)


ENCODED = """
from datetime import datetime
from orchestrator.airflow import DAG, HttpOperator

with DAG("encoded", schedule=None, params={"item": "x"}) as dag:
    HttpOperator(task_id="get", http_conn_id="api", method="GET",
                 endpoint="items/{{ params.item }}?day={{ ds }}")
"""


def test_an_http_operators_endpoint_values_never_change_the_urls_structure(
    harness: Harness, write_dag, monkeypatch
):
    from tests.integration.test_http_tasks import Server

    server = Server()
    try:
        monkeypatch.setenv("ORCHESTRATOR_CONN_API", f"http://127.0.0.1:{server.port}")
        write_dag("encoded.py", ENCODED)
        assert harness.parse().dags == 1, harness.store.import_errors()
        run = harness.store.trigger_run(
            "encoded", harness.clock.now(), conf={"item": "../admin?drop=1&x"}
        )
        run = harness.run_until_finished(run.run_id)
    finally:
        server.close()
    assert run.state == "success"
    [request] = server.requests
    assert (
        request["raw_path"] == f"/items/..%2Fadmin%3Fdrop%3D1%26x?day={run.logical_date:%Y-%m-%d}"
    )


def test_mapped_task_groups_map_each_item_through_the_group(harness: Harness, write_dag):
    """Issue 25 item 7 through orchestrator.airflow: Airflow's own mapped group examples."""
    _load(harness, write_dag, "example_task_group_mapping.py")
    run, _ = _run(harness, "example_task_group_mapping")
    check_run(harness.store, run)
    run, _ = _run(harness, "example_task_group_mapping_files")
    check_run(harness.store, run)
    states = {(t.task_id, t.map_index): t.state for t in harness.store.task_instances(run.run_id)}
    assert states[("file_transforms.convert", 2)] == TaskState.FAILED
    assert states[("file_transforms.report", 2)] == TaskState.SUCCESS  # all_done, per item
    names = {
        t.map_index: t.rendered_map_index
        for t in harness.store.task_instances(run.run_id)
        if t.task_id == "file_transforms.convert"
    }
    assert names == {0: "data/input.csv", 1: "data/input2.csv", 2: "data/bad.csv"}


SETS_A_VARIABLE = """
from datetime import datetime

from orchestrator.airflow import DAG, Variable, task

with DAG(dag_id="sets_a_variable", schedule=None, start_date=datetime(2026, 1, 1)) as dag:

    @task
    def remember():
        Variable.set("last_batch", {"rows": 12, "day": "2026-01-01"}, serialize_json=True)
        Variable.set("plain", "text value", description="set by a task")

    @task
    def recall():
        return [Variable.get("last_batch", deserialize_json=True), Variable.get("plain")]

    @task
    def too_big():
        Variable.set("huge", "x" * 2_000_000)

    @task
    def bad_name():
        Variable.set("bad key$(id)", "x")

    @task
    def over_a_secret():
        Variable.set("api_token", "stolen")

    remember() >> recall()
    too_big()
    bad_name()
    over_a_secret()
"""


def test_variable_set_in_a_task_is_stored_and_read_by_the_next(harness: Harness, write_dag):
    """Issue 26: Airflow's Variable.set from a try, through the worker, into the store."""
    from orchestrator.store.credentials.secret_box import box_of

    write_dag("sets_a_variable.py", SETS_A_VARIABLE)
    box = box_of(harness.settings)
    harness.store.set_variable("api_token", "s3cret", harness.clock.now(), box, secret=True)
    harness.parse()
    assert harness.store.import_errors() == []
    run, tis = _run(harness, "sets_a_variable")
    assert tis["remember"].state == TaskState.SUCCESS
    assert _results(harness, run.run_id, ["recall"])["recall"] == [
        {"rows": 12, "day": "2026-01-01"},
        "text value",
    ]
    stored = {v.key: v for v in harness.store.list_variables()}
    assert stored["last_batch"].is_json and stored["plain"].description == "set by a task"
    assert tis["too_big"].state == TaskState.FAILED
    assert "over the" in tis["too_big"].error and "max_result_bytes" in tis["too_big"].error
    assert "huge" not in stored
    # a name the store refuses, and a secret variable, fail the try naming why
    assert tis["bad_name"].state == TaskState.FAILED
    assert "bad key$(id)" in tis["bad_name"].error and "bad key$(id)" not in stored
    assert tis["over_a_secret"].state == TaskState.FAILED
    assert "secret variable, which a task cannot replace" in tis["over_a_secret"].error
    assert harness.store.get_variable("api_token", box).value == "s3cret"


def test_trigger_rules_decide_as_airflows_docs_say(harness: Harness, write_dag):
    _load(harness, write_dag, "example_trigger_rules.py")
    run, tis = _run(harness, "example_trigger_rules")
    check_run(harness.store, run)
    assert tis["fails"].try_number == 1  # retries=0


def test_short_circuit_decorator_skips_all_or_only_direct_downstream(harness: Harness, write_dag):
    _load(harness, write_dag, "example_short_circuit_decorator.py")
    run, _ = _run(harness, "example_short_circuit_decorator")
    check_run(harness.store, run)


def test_mapped_classic_operators_map_over_lists_results_and_cross_products(
    harness: Harness, write_dag
):
    _load(harness, write_dag, "example_mapped_classic_operators.py")
    run, _ = _run(harness, "example_mapped_classic_operators")
    check_run(harness.store, run)
    instances = harness.store.task_instances(run.run_id)
    mapped: dict[str, list] = {}
    for ti in instances:
        if ti.map_index >= 0:
            mapped.setdefault(ti.task_id, []).append((ti.map_index, str(ti.state)))
    assert {t: sorted(v) for t, v in mapped.items()} == {
        "count": [(0, "success"), (1, "success"), (2, "success")],
        "greet": [(0, "success"), (1, "success")],  # one per command make_commands returned
        "dated": [(0, "success"), (1, "success")],
        "add": [(0, "success"), (1, "success")],
        "join": [(i, "success") for i in range(4)],  # 2 op_args x 2 op_kwargs
    }
    assert sorted(_results(harness, run.run_id, ["join"])["join"]) == ["a+a", "a-a", "b+b", "b-b"]


def test_sensors_in_reschedule_mode_wait_on_the_clock_and_meet_or_time_out(
    harness: Harness, write_dag, dags_dir, monkeypatch
):
    from datetime import UTC, datetime, timedelta

    from tests.integration.test_http_tasks import Server

    server = Server()
    try:
        for key, value in http_conn(server.port).items():
            monkeypatch.setenv(key, value)
        _load(harness, write_dag, "example_sensors_reschedule.py")
        start = harness.clock.now()
        run = harness.store.trigger_run("example_sensors_reschedule", start)
        for _ in range(2):
            harness.tick()
            harness.worker.run_until_idle()
        harness.tick()
        tis = {t.task_id: str(t.state) for t in harness.store.task_instances(run.run_id)}
        assert tis.pop("all_met") not in ("success", "running", "skipped")  # not yet
        assert tis == FIRST_POKES
        (dags_dir / "incoming").mkdir()
        (dags_dir / "incoming" / f"{run.logical_date:%Y-%m-%d}.csv").write_text("a,b\n")
        (dags_dir / "ready.flag").write_text("")
        upstream = harness.store.trigger_run(
            "example_sensor_upstream", harness.clock.now(), logical_date=run.logical_date
        )
        run = harness.run_until_finished(run.run_id, step=timedelta(minutes=1))
    finally:
        server.close()
    assert harness.store.get_run(upstream.run_id).state == "success"
    instances = {t.task_id: t for t in harness.store.task_instances(run.run_id)}
    assert {t: str(ti.state) for t, ti in instances.items()} == {
        "wait_for_file": "success",
        "wait_half_an_hour": "success",
        "half_past_midnight": "success",
        "past_date": "success",
        "date_far_ahead": "skipped",  # soft_fail past its timeout
        "wait_for_flag": "success",
        "api_is_up": "success",
        "never_found": "skipped",  # soft_fail past its timeout
        "wait_for_upstream": "success",
        "all_met": "success",  # none_failed
    }
    assert run.state == "success"
    for sensor in ("wait_for_file", "wait_half_an_hour", "wait_for_flag", "never_found"):
        assert instances[sensor].try_number == 1, sensor  # a reschedule is not a retry
    assert start == datetime(2026, 1, 1, tzinfo=UTC)  # the fake clock: 00:00
    for sensor in ("wait_half_an_hour", "half_past_midnight"):
        assert instances[sensor].end_date >= start + timedelta(minutes=30), sensor
    assert instances["never_found"].end_date >= start + timedelta(minutes=30)
    pokes_404 = [r for r in server.requests if r["path"] == "/status/404"]
    assert 2 <= len(pokes_404) <= 8  # a poke every 5 minutes for 30 minutes


def test_variables_connections_and_macros_in_templates_and_in_code(harness: Harness, write_dag):
    _load(harness, write_dag, "example_variables_connections_macros.py")
    run, _ = _run(harness, "example_variables_connections_macros")
    check_run(harness.store, run)


def test_catchup_and_backfill_create_give_one_run_per_day(
    harness: Harness, write_dag, settings, monkeypatch, capsys
):
    from orchestrator.cli import main

    for key in ("database_url", "dags_folder", "state_dir"):
        monkeypatch.setenv(f"ORCHESTRATOR_{key.upper()}", getattr(settings, key))
    dag_id = "example_catchup_backfill"
    _load(harness, write_dag, "example_catchup_backfill.py")
    harness.tick()
    assert harness.store.list_runs(dag_id) == []  # is_paused_upon_creation
    capsys.readouterr()
    argv = ["backfill", "create", "--dag-id", dag_id, "--from-date", "2025-12-26"]
    assert main([*argv, "--to-date", "2025-12-28", "--no-wait"]) == 0
    assert "3 run(s) created" in capsys.readouterr().out
    assert main(["dags", "unpause", dag_id]) == 0
    harness.tick()  # catchup=True: the fire times left up to now (2026-01-01), each once
    runs = sorted(harness.store.list_runs(dag_id), key=lambda r: r.logical_date)
    assert [(f"{r.logical_date:%Y-%m-%d}", r.run_type) for r in runs] == [
        ("2025-12-26", "backfill"),
        ("2025-12-27", "backfill"),
        ("2025-12-28", "backfill"),
        ("2025-12-29", "scheduled"),
        ("2025-12-30", "scheduled"),
        ("2025-12-31", "scheduled"),
        ("2026-01-01", "scheduled"),  # Airflow 3: the logical date is the fire time
    ]
    for r in runs:
        assert harness.run_until_finished(r.run_id).state == "success", r.run_id
    for r in runs:
        out = _results(harness, r.run_id, ["print_date", "report"])
        day = f"{r.logical_date:%Y-%m-%d}"
        assert out == {"print_date": day, "report": f"{r.run_id} {day} {day}"}
    spec = harness.store.spec(dag_id, harness.store.get_dag(dag_id).version_hash)
    assert spec.tasks["print_date"].depends_on_past and spec.tasks["report"].retries == 1


def test_skip_dag_joins_a_skip_by_all_success_and_by_one_success(harness: Harness, write_dag):
    _load(harness, write_dag, "example_skip_dag.py")
    run, _ = _run(harness, "example_skip_dag")
    check_run(harness.store, run)  # skipped leaves do not fail a run


def test_params_trigger_ui_validates_the_conf_and_branches_the_mapped_greetings(
    harness: Harness, write_dag, settings, monkeypatch, capsys
):
    from orchestrator.cli import main
    from orchestrator.errors import ParamValidationError

    _load(harness, write_dag, "example_params_trigger_ui.py")
    dag_id = "example_params_trigger_ui"
    run, _ = _run(harness, dag_id, CONF[dag_id])
    check_run(harness.store, run)
    run, _ = _run(harness, dag_id)  # the params' defaults: three names, three languages
    assert run.state == "success"
    out = _results(harness, run.run_id, ["generate_german_greeting"])
    assert out["generate_german_greeting"][2] == "Sehr geehrter Herr/Frau Thomas."
    with pytest.raises(ParamValidationError, match="english"):
        harness.store.trigger_run(dag_id, harness.clock.now(), conf={"english": "yes"})
    for key in ("database_url", "dags_folder", "state_dir"):
        monkeypatch.setenv(f"ORCHESTRATOR_{key.upper()}", getattr(settings, key))
    capsys.readouterr()
    assert main(["dags", "trigger", dag_id, "-c", '{"names": "Linda"}']) != 0  # not an array
    assert "names" in capsys.readouterr().err
    assert len(harness.store.list_runs(dag_id)) == 2  # neither bad conf made a run


RESETS = """
from datetime import datetime

from orchestrator.airflow import DAG, BashOperator, TriggerDagRunOperator

with DAG(dag_id="reset_target", schedule=None, start_date=datetime(2026, 1, 1)) as target:
    BashOperator(task_id="work", bash_command="echo working")

for reset in (True, False):
    with DAG(dag_id=f"reset_source_{reset}", schedule=None, start_date=datetime(2026, 1, 1)):
        TriggerDagRunOperator(task_id="kick", trigger_dag_id="reset_target",
                              wait_for_completion=True, poke_interval=1, reset_dag_run=reset)
"""


def test_reset_dag_run_reruns_the_finished_run_a_cleared_trigger_finds(harness: Harness, write_dag):
    """Issue 26: TriggerDagRunOperator(reset_dag_run=True) as Airflow's: clearing the
    trigger runs the target run again; without it the cleared trigger finds the old run."""
    write_dag("resets.py", RESETS)
    harness.parse()
    assert harness.store.import_errors() == []
    store = harness.store
    for reset in (True, False):
        run, tis = _run(harness, f"reset_source_{reset}")
        assert run.state == "success" and tis["kick"].state == TaskState.SUCCESS
        made = json.loads(store.results(run.run_id, ["kick"])["kick"])["run_id"]
        assert store.get_run(made).state == "success"
        [work] = store.task_instances(made)
        assert work.try_number == 1
        store.clear_task(run.run_id, "kick", harness.clock.now())
        assert harness.run_until_finished(run.run_id).state == "success"
        [work] = store.task_instances(made)
        assert store.get_run(made).state == "success"
        assert work.try_number == (2 if reset else 1), reset  # run again only when reset
        assert json.loads(store.results(run.run_id, ["kick"])["kick"])["run_id"] == made


def test_external_task_sensor_with_execution_date_fn_waits_for_the_runs_it_names(
    harness: Harness, write_dag
):
    """Issue 26: execution_date_fn (one date, or a list) through the worker's lookup."""
    from datetime import timedelta

    _load(harness, write_dag, "example_external_task_date_fn.py")
    store, now = harness.store, harness.clock.now()
    at = now.replace(minute=0, second=0, microsecond=0)
    report = store.trigger_run("hourly_report", now, logical_date=at)
    harness.tick()
    harness.worker.run_until_idle()
    harness.tick()
    states = {t.task_id: str(t.state) for t in store.task_instances(report.run_id)}
    assert states == {"wait_for_ingest": "up_for_reschedule", "wait_for_two": "up_for_reschedule"}
    one = store.trigger_run("hourly_ingest", now, logical_date=at - timedelta(hours=1))
    assert harness.run_until_finished(one.run_id).state == "success"
    for _ in range(5):  # the reschedules come due on the fake clock
        harness.clock.advance(timedelta(seconds=2))
        harness.tick()
        harness.worker.run_until_idle()
    states = {t.task_id: str(t.state) for t in store.task_instances(report.run_id)}
    # the hour before has run; two hours before has not: the second sensor still waits
    assert states == {"wait_for_ingest": "success", "wait_for_two": "up_for_reschedule"}
    two = store.trigger_run("hourly_ingest", now, logical_date=at - timedelta(hours=2))
    assert harness.run_until_finished(two.run_id).state == "success"
    assert harness.run_until_finished(report.run_id).state == "success"
