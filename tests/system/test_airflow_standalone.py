"""Issue 26's last "done when": the whole Airflow sample folder (tests/airflow_dags/) ported
by the real `python -m orchestrator dags port dags --write`, then run on one real
`orchestrator standalone` per backend (SQLite in the default state folder, and a fresh
PostgreSQL database), triggered as an Airflow user triggers them (the CLI's `dags trigger
-c`, `backfill create`, `dags unpause`, and the JSON API), each run checked against the
outcome its Airflow semantics give (tests/airflow_expectations.py, the table the
in-process test tests/integration/test_airflow_dags.py checks too).

One sample is checked only in part here: example_sensors_reschedule.py's sensors poke
every 1 to 10 minutes with 30 to 60 minute timeouts, so its run is checked after every
sensor's first poke (met, or up_for_reschedule with its first try), and left running;
the in-process test's fake clock takes it to the end. Tuned here: the start dates of
the two catchup samples are moved to a few days ago, so that catchup makes 4 runs, not
one a day since December 2025.

On the real clock, and so here, Airflow's semantics differ from the fake clock's in two
places: the scheduled run of latest_only_with_trigger is the latest one (its tasks run),
and the TimeSensor waiting for 23:00 of the run's day is met after 23:00."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path

import pytest
import requests
from sqlalchemy import create_engine, text

from orchestrator.client import Client, ClientError
from orchestrator.store import Store
from tests.airflow_expectations import CONF, ENV, EXPECTED, FIRST_POKES, check_run, http_conn
from tests.conftest import PG_ADMIN_URL, REQUIRE_PG, _pg_available
from tests.system.cluster import cli, free_port, standalone

SAMPLES = Path(__file__).resolve().parents[1] / "airflow_dags"
RESCHEDULE = "example_sensors_reschedule"  # minutes-long pokes: see above
FAST = {
    "ORCHESTRATOR_SCHEDULER_INTERVAL": "0.2",
    "ORCHESTRATOR_WORKER_POLL_SECONDS": "0.2",
    "ORCHESTRATOR_PARSE_INTERVAL": "2",
    "ORCHESTRATOR_ALERT_INTERVAL": "0.5",
    "ORCHESTRATOR_WORKER_CONCURRENCY": "8",
}
# the DAGs a manual run is made of, through the API, each with CONF's conf if any;
# the others are triggered below with their own logical dates or by other runs
MANUAL = sorted(
    set(EXPECTED)
    - {
        "example_trigger_target_dag",  # the controller triggers it
        "example_external_task_marker_parent",  # at the child's logical date
        "example_external_task_marker_child",
        "hourly_report",  # at the hour, its ingest runs an hour and two before
        "sdk_helpers",  # through the CLI
    }
)
CATCHUP = "example_catchup_backfill"
CONSUMERS = (
    "asset_consumes_1",
    "consume_1_and_2_with_asset_expressions",
    "consume_1_or_2_with_asset_expressions",
    "consume_1_or_both_2_and_3_with_asset_expressions",
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict]]:
    """The store's URL and the env naming it: the default state folder's SQLite file,
    or a fresh PostgreSQL database dropped at the end (standalone migrates both)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / '.orchestrator' / 'orchestrator.db'}", {}
        return
    problem = _pg_available()
    if problem:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required (ORCHESTRATOR_REQUIRE_POSTGRES=1): {problem}")
        pytest.skip(f"PostgreSQL not available: {problem}")
    name = f"orch_airflow_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    try:
        yield url, {"ORCHESTRATOR_DATABASE_URL": url}
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _port_the_folder(project: Path, today: datetime) -> list[str]:
    """Copy the samples into ``project/dags``, move the catchup start dates to a few days
    before ``today``, and port the folder with the real CLI; the DAG files' names."""
    dags = project / "dags"
    shutil.copytree(SAMPLES, dags, ignore=shutil.ignore_patterns("__pycache__"))
    for name, old, days in (
        ("example_params_and_templates.py", "datetime.datetime(2025, 12, 29,", 3),
        (f"{CATCHUP}.py", "datetime.datetime(2025, 12, 26,", 6),
    ):
        day = today - timedelta(days=days)
        source = (dags / name).read_text()
        assert old in source, name
        new = f"datetime.datetime({day.year}, {day.month}, {day.day},"
        (dags / name).write_text(source.replace(old, new))
    names = sorted(p.name for p in dags.glob("*.py"))
    assert len(names) >= 25
    done = cli(project, "dags", "port", "dags", "--write", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    reports = json.loads(done.stdout)
    assert sorted(Path(r["path"]).name for r in reports) == names
    for report in reports:
        assert report["verdict"] in ("ported", "ported with warnings"), report
        assert report["written"] and report["problems"] == [], report
    for name in names:
        ported = (dags / name).read_text()
        assert "\nfrom airflow" not in ported and "\nfrom orchestrator.airflow import" in ported
    return names


def _wait(predicate, what: str, proc, log: Path, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        found = predicate()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what}\n" + log.read_text()[-3000:]
    )


@pytest.mark.system
def test_the_ported_folder_runs_on_a_real_standalone(tmp_path: Path, database) -> None:
    from tests.integration.test_http_tasks import Server

    url, db_env = database
    started = time.monotonic()
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    names = _port_the_folder(tmp_path, today)
    server = Server()
    port = free_port()
    env = {**ENV, **http_conn(server.port), **FAST, **db_env}
    env["ORCHESTRATOR_WEB_PORT"] = str(port)
    log = tmp_path / "standalone.log"
    try:
        with standalone(tmp_path, **env) as proc:
            store = Store(url)
            try:
                _run_the_folder(tmp_path, store, proc, log, port, env, server, today)
            finally:
                store.dispose()
    finally:
        server.close()
    print(f"{len(names)} files, {time.monotonic() - started:.1f}s")  # the wall time, with -s


def _run_the_folder(project, store, proc, log, port, env, server, today) -> None:
    dag_ids = set(EXPECTED) | set(CONSUMERS) | {CATCHUP, "hourly_ingest"}

    def parsed():
        try:
            have = {d.dag_id for d in store.list_dags()}
        except Exception:  # noqa: BLE001 - the schema may not be there yet
            return False
        return dag_ids <= have

    _wait(parsed, "every sample DAG to be parsed", proc, log, 60)
    assert store.import_errors() == []
    now = datetime.now(UTC).replace(microsecond=0)
    hour = now.replace(minute=0, second=0)
    made: dict[str, list[str]] = {}
    base = f"http://127.0.0.1:{port}"
    session = requests.Session()  # no login on loopback; a POST carries the CSRF token
    session.headers["X-CSRF-Token"] = session.get(base + "/api/v1/csrf").json()["csrf_token"]
    with Client(base, session=session) as api:
        for dag_id in MANUAL:
            made.setdefault(dag_id, []).append(api.trigger(dag_id, CONF.get(dag_id)))
        defaults = api.trigger("example_params_trigger_ui")  # the params' defaults
        api.trigger("example_sensor_upstream")  # not at RESCHEDULE's logical date
        made[RESCHEDULE] = [api.trigger(RESCHEDULE)]
        child = api.trigger("example_external_task_marker_child", logical_date=now)
        api.trigger("example_external_task_marker_parent", logical_date=now)
        report = api.trigger("hourly_report", logical_date=hour)
        for hours in (1, 2):
            api.trigger("hourly_ingest", logical_date=hour - timedelta(hours=hours))
        with pytest.raises(ClientError, match="english") as refused:
            api.trigger("example_params_trigger_ui", {"english": "yes"})
        assert refused.value.status == 400
    made["example_external_task_marker_child"] = [child]
    made["hourly_report"] = [report]
    # the Airflow user's commands: a trigger with -c, a refused conf, a backfill, unpause
    cli_env = {k: v for k, v in env.items() if k == "ORCHESTRATOR_DATABASE_URL"}
    done = cli(
        project, "dags", "trigger", "sdk_helpers", "-c", '{"mode": "full"}', "--json", env=cli_env
    )
    assert done.returncode == 0, done.stderr
    made["sdk_helpers"] = [json.loads(done.stdout)["run_id"]]
    bad = cli(
        project,
        "dags",
        "trigger",
        "example_params_trigger_ui",
        "-c",
        '{"names": "Linda"}',
        env=cli_env,
    )
    assert bad.returncode != 0 and "names" in bad.stderr
    first = today - timedelta(days=6)
    argv = ["backfill", "create", "--dag-id", CATCHUP, "--no-wait"]
    argv += [
        "--from-date",
        f"{first:%Y-%m-%d}",
        "--to-date",
        f"{first + timedelta(days=2):%Y-%m-%d}",
    ]
    done = cli(project, *argv, env=cli_env)
    assert done.returncode == 0 and "3 run(s) created" in done.stdout, done.stdout + done.stderr
    assert cli(project, "dags", "unpause", CATCHUP, env=cli_env).returncode == 0
    callbacks = project / "dags" / "callbacks.jsonl"

    def finished():
        runs = store.list_runs(limit=1000)
        if any(r.state not in ("success", "failed") for r in runs if r.dag_id != RESCHEDULE):
            return False
        poked = {t.task_id: str(t.state) for t in store.task_instances(made[RESCHEDULE][0])}
        poked.pop("all_met", None)  # waits for the sensors
        if not poked or set(poked.values()) - {"success", "up_for_reschedule"}:
            return False  # a sensor not poked yet
        by_dag = {}
        for r in runs:
            by_dag.setdefault(r.dag_id, []).append(r)
        enough = (
            all(run_id in {r.run_id for r in runs} for ids in made.values() for run_id in ids)
            and len(by_dag.get(CATCHUP, [])) >= 7  # 3 backfilled, 4 caught up
            and len(by_dag.get("example_params_and_templates", [])) >= 5  # 4 and a manual
            and all(by_dag.get(c) for c in CONSUMERS)
            and by_dag.get("example_trigger_target_dag")
            and callbacks.exists()
            and len(callbacks.read_text().splitlines()) >= 4
        )
        return enough and by_dag

    by_dag = _wait(finished, "every run to finish", proc, log, 100)
    _check(store, by_dag, made, defaults, project, server, today)


def _check(store, by_dag, made, defaults, project, server, today) -> None:
    special = {
        "example_params_trigger_ui",
        "example_params_and_templates",
        "example_sensors",
        "example_task_group_mapping_files",
        CATCHUP,
    }
    for dag_id, runs in by_dag.items():
        for run in runs:
            if dag_id in special or dag_id == RESCHEDULE:
                continue
            if dag_id in EXPECTED:
                check_run(store, run)  # a scheduled run too: the same outcome
            else:  # the asset consumers, the ingest runs, a trigger's own DAG
                states = {str(t.state) for t in store.task_instances(run.run_id)}
                assert run.state == "success" and states == {"success"}, dag_id
    for dag_id, ids in made.items():  # every run the user made ran
        assert {r.run_id for r in by_dag[dag_id]} >= set(ids), dag_id
    # the latest_only scheduled run: the latest one on the real clock, so not skipped
    assert {r.run_type for r in by_dag["latest_only_with_trigger"]} == {"scheduled", "manual"}

    # params: the conf's run, the defaults' run; the refused confs made none
    ui = {r.run_id: r for r in by_dag["example_params_trigger_ui"]}
    assert len(ui) == 2
    check_run(store, ui[made["example_params_trigger_ui"][0]])
    assert ui[defaults].state == "success"
    greetings = json.loads(
        store.results(defaults, ["generate_german_greeting"])["generate_german_greeting"]
    )
    assert greetings[2] == "Sehr geehrter Herr/Frau Thomas."

    # catchup=True (a start date moved to 3 days ago): one scheduled run a day, and the manual one
    templates = by_dag["example_params_and_templates"]
    [manual] = [r for r in templates if r.run_type == "manual"]
    check_run(store, manual)
    scheduled = sorted(
        (r for r in templates if r.run_type == "scheduled"), key=lambda r: r.logical_date
    )
    assert [r.logical_date.date() for r in scheduled[:4]] == [
        (today - timedelta(days=d)).date() for d in (3, 2, 1, 0)
    ]
    for r in scheduled:
        assert r.state == "success"
        out = json.loads(store.results(r.run_id, ["env_var_test_task"])["env_var_test_task"])
        assert out == "x is 10"

    # a backfill of 3 days, then unpaused: the days left up to today, each once
    catchup = sorted(by_dag[CATCHUP], key=lambda r: r.logical_date)
    first = (today - timedelta(days=6)).date()
    assert [(r.logical_date.date(), r.run_type) for r in catchup[:7]] == [
        (first + timedelta(days=i), "backfill" if i < 3 else "scheduled") for i in range(7)
    ]
    for r in catchup:
        raw = store.results(r.run_id, ["print_date", "report"])
        day = f"{r.logical_date:%Y-%m-%d}"
        assert r.state == "success", r.run_id
        assert {k: json.loads(v) for k, v in raw.items()} == {
            "print_date": day,
            "report": f"{r.run_id} {day} {day}",
        }

    # sensors: the TimeSensor for 23:00 of the run's day is met when the run is that late
    [sensors] = by_dag["example_sensors"]
    late = sensors.logical_date.hour >= 23
    expected = dict(EXPECTED["example_sensors"].tasks)
    if late:
        expected["timeout_after_second_date_in_the_future"] = "success"
    assert {t.task_id: str(t.state) for t in store.task_instances(sensors.run_id)} == expected
    assert sensors.state == "success"
    assert (project / "dags" / "temporary_file_for_testing").exists()

    # a mapped group: the bad file fails its instance, the all_done report runs for each
    [files] = by_dag["example_task_group_mapping_files"]
    check_run(store, files)
    states = {(t.task_id, t.map_index): str(t.state) for t in store.task_instances(files.run_id)}
    assert states[("file_transforms.convert", 2)] == "failed"
    assert states[("file_transforms.report", 2)] == "success"

    # assets: produces_1's scheduled run (catchup=False: the latest day) and produces_2's
    # manual one; the consumers whose conditions they satisfy ran, each event once
    counts = {c: len(by_dag.get(c, [])) for c in CONSUMERS}
    events_1 = len(by_dag["asset_produces_1"])  # events of one tick make one run
    assert counts["asset_consumes_1"] == events_1 == 1, counts
    assert counts["consume_1_and_2_with_asset_expressions"] == 1, counts  # dag2's once
    assert 1 <= counts["consume_1_or_2_with_asset_expressions"] <= events_1 + 1, counts
    assert counts["consume_1_or_both_2_and_3_with_asset_expressions"] == events_1, counts

    # the trigger: the target's run has the controller's conf and logical date
    [controller] = by_dag["example_trigger_controller_dag"]
    [target] = by_dag["example_trigger_target_dag"]
    assert target.conf == {"message": "Hello World"}
    assert target.logical_date == controller.logical_date

    # callbacks: in the try's process, and the DAG's failure through the alerts
    [callback_run] = by_dag["example_callback"]
    lines = [json.loads(x) for x in (project / "dags" / "callbacks.jsonl").read_text().splitlines()]
    assert sorted((x["kind"], x["task"]) for x in lines) == [
        ("dag_failure", None),
        ("task_failure", "task4"),
        ("task_success", "task3"),
        ("task_success_2", "task3"),
    ]
    assert {x["run_id"] for x in lines} == {callback_run.run_id}

    # http: the requests the server saw, and no password in the stored error
    post = next(r for r in server.requests if r["path"] == "/post")
    assert post["method"] == "POST" and post["headers"]["Authorization"].startswith("Basic ")
    get = next(r for r in server.requests if r["path"].startswith("/get/"))
    assert get["query"] == {"param1": ["value1"], "param2": ["value2"]}
    [http_run] = [r for r in by_dag["example_http_operator"] if r.run_type == "manual"]
    error = store.task_instance(http_run.run_id, "bad_status").error
    assert "500" in error and "s3cret-pw" not in error

    # reschedule mode: each sensor poked once, met or waiting for its next poke in minutes
    [waiting] = by_dag[RESCHEDULE]
    assert waiting.state == "running"
    instances = {t.task_id: t for t in store.task_instances(waiting.run_id)}
    assert str(instances.pop("all_met").state) not in ("success", "running", "skipped")
    expected = dict(FIRST_POKES)
    if waiting.logical_date.time() >= dt_time(0, 30):  # the real clock: 00:30 has passed
        expected["half_past_midnight"] = "success"
    assert {t: str(ti.state) for t, ti in instances.items()} == expected
    assert {ti.try_number for ti in instances.values()} == {1}  # a reschedule is no retry
