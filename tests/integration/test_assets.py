"""Assets on both backends: outlet events in the fenced success, external emits, and
asset-triggered runs created exactly once per consumed event set (issue 15)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.store.core import models as m

PRODUCER = """
from orchestrator import DAG, Asset, task

sales = Asset("warehouse://sales/daily", name="sales", group="finance")
costs = Asset("warehouse://costs/daily", name="costs")

with DAG("ingest", schedule=None) as dag:
    @task(outlets=[sales])
    def load(ctx):
        ctx.outlet_event(sales, extra={"rows": 1200})

    @task(outlets=[costs])
    def load_costs(ctx):
        pass

    dag.shell("archive", "true", outlets=[sales])
"""

CONSUMER = """
from orchestrator import DAG, Asset, task

sales = Asset("warehouse://sales/daily", name="sales", group="finance")
costs = Asset("warehouse://costs/daily", name="costs")

with DAG("report", schedule={schedule}, misfire={misfire!r}) as dag:
    @task
    def report(ctx):
        return [[e.uri, e.extra, e.source_task_id, e.emitter]
                for e in ctx.triggering_asset_events]
"""


def _setup(harness, write_dag, schedule="[sales, costs]", misfire="coalesce"):
    write_dag("ingest.py", PRODUCER)
    write_dag("report.py", CONSUMER.format(schedule=schedule, misfire=misfire))
    assert harness.parse().dags == 2


def _run_producer(harness):
    run = harness.store.trigger_run("ingest", harness.clock.now())
    harness.run_until_finished(run.run_id)
    return run


def _asset_runs(store):
    return [r for r in store.list_runs("report") if r.run_type == "asset_triggered"]


def test_outlets_record_events_and_an_all_schedule_runs_once_with_its_events(harness, write_dag):
    _setup(harness, write_dag)
    store = harness.store
    assets = {a.uri: a for a in store.list_assets()}
    assert set(assets) == {"warehouse://sales/daily", "warehouse://costs/daily"}
    sales = assets["warehouse://sales/daily"]
    assert (sales.name, sales.group) == ("sales", "finance")
    assert set(sales.producers) == {("ingest", "load"), ("ingest", "archive")}
    assert sales.consumers == ("report",)

    producer = _run_producer(harness)
    events = store.asset_events("warehouse://sales/daily")
    assert len(events) == 2  # load and archive, one per successful try
    by_task = {e.source_task_id: e for e in events}
    assert by_task["load"].extra == {"rows": 1200}
    assert by_task["archive"].extra == {}
    assert by_task["load"].source_run_id == producer.run_id
    harness.tick()
    runs = _asset_runs(store)
    assert len(runs) == 1
    [made] = store.events(kind="asset_run_created")
    assert made.run_id == runs[0].run_id and "3 event(s)" in made.message
    harness.tick()  # the same events never make a second run
    assert len(_asset_runs(store)) == 1
    done = harness.run_until_finished(runs[0].run_id)
    assert done.state == "success"
    got = json.loads(store.results(done.run_id, ["report"])["report"])
    assert sorted(x[2] for x in got) == ["archive", "load", "load_costs"]
    assert ["warehouse://sales/daily", {"rows": 1200}, "load", None] in got
    consumed = store.asset_events(run_id=done.run_id)
    assert all(done.run_id in e.triggered_runs for e in consumed)


def test_all_waits_for_every_asset_and_any_runs_on_either(harness, write_dag):
    _setup(harness, write_dag)
    store, now = harness.store, harness.clock.now()
    store.emit_asset_event("warehouse://sales/daily", {"n": 1}, now, emitter="cli:test")
    harness.tick()
    assert _asset_runs(store) == []  # costs has no event yet
    waits = {w.uri: w for w in store.asset_waits("report", store.current_spec("report"))}
    assert waits["warehouse://sales/daily"].queued == 1
    assert waits["warehouse://costs/daily"].queued == 0
    store.emit_asset_event("warehouse://costs/daily", None, now, emitter="cli:test")
    harness.tick()
    assert len(_asset_runs(store)) == 1


def test_or_condition_runs_per_event_and_backfill_replays_each(harness, write_dag):
    _setup(harness, write_dag, schedule="sales | costs", misfire="backfill")
    store, now = harness.store, harness.clock.now()
    store.set_paused("report", True, now)
    for uri in ("warehouse://sales/daily", "warehouse://costs/daily", "warehouse://sales/daily"):
        store.emit_asset_event(uri, {}, now)
    harness.tick()
    assert _asset_runs(store) == []  # paused: the events wait in the queue
    store.set_paused("report", False, now)
    harness.tick()
    assert len(_asset_runs(store)) == 3  # backfill: one run per event set


def test_unpause_coalesces_queued_events_into_one_run_by_default(harness, write_dag):
    _setup(harness, write_dag, schedule="sales | costs")
    store, now = harness.store, harness.clock.now()
    store.set_paused("report", True, now)
    for _ in range(4):
        store.emit_asset_event("warehouse://sales/daily", {}, now)
    harness.tick()
    store.set_paused("report", False, now)
    harness.tick()
    runs = _asset_runs(store)
    assert len(runs) == 1
    assert len(store.asset_events(run_id=runs[0].run_id)) == 4


def test_unpause_with_skip_drops_what_was_queued_while_paused(harness, write_dag):
    _setup(harness, write_dag, schedule="sales | costs", misfire="skip")
    store, now = harness.store, harness.clock.now()
    store.set_paused("report", True, now)
    store.emit_asset_event("warehouse://sales/daily", {}, now)
    store.set_paused("report", False, now)
    harness.tick()
    assert _asset_runs(store) == []
    store.emit_asset_event("warehouse://sales/daily", {}, now)  # after unpausing: runs
    harness.tick()
    assert len(_asset_runs(store)) == 1


def test_a_stale_workers_success_records_no_asset_event(harness, write_dag, store, clock):
    _setup(harness, write_dag)
    run = store.trigger_run("ingest", clock.now())
    harness.tick()
    claims = store.claim("stale-worker", clock.now(), timedelta(seconds=30), limit=10)
    load = next(c for c in claims if c.task_id == "load")
    clock.advance(timedelta(seconds=60))
    store.reap_expired(clock.now())  # the lease expired: the attempt is no longer ours
    assert store.finish_success(load, None, clock.now()) is False
    assert store.asset_events("warehouse://sales/daily") == []
    assert run.run_id


def test_two_stores_consuming_the_same_queue_create_one_run(harness, write_dag, settings):
    from orchestrator.store import Store

    _setup(harness, write_dag, schedule="sales | costs")
    store, now = harness.store, harness.clock.now()
    store.emit_asset_event("warehouse://sales/daily", {}, now)
    other = Store(settings.database_url)
    try:
        created = store.create_asset_runs(now) + other.create_asset_runs(now)
        created += other.create_asset_runs(now + timedelta(seconds=1))
    finally:
        other.dispose()
    assert created == 1
    assert len(_asset_runs(store)) == 1
    with store.read() as conn:
        assert conn.execute(select(func.count()).select_from(m.asset_queue)).scalar() == 0


def test_emit_refuses_bad_input_and_unknown_assets_and_stores_nothing(harness, write_dag):
    _setup(harness, write_dag)
    store, now = harness.store, harness.clock.now()
    with pytest.raises(NotFoundError, match="unknown asset 'warehouse://nope'"):
        store.emit_asset_event("warehouse://nope", {}, now)
    with pytest.raises(ConfigError, match="not an asset URI"):
        store.emit_asset_event("sales", {}, now)
    with pytest.raises(ConfigError, match="extra must be a JSON object"):
        store.emit_asset_event("warehouse://sales/daily", [1, 2], now)
    with pytest.raises(ConfigError, match="NaN or Infinity"):
        store.emit_asset_event("warehouse://sales/daily", {"x": float("nan")}, now)
    assert store.asset_events() == []


def test_asset_or_time_schedule_runs_on_events_and_on_time(harness, write_dag):
    write_dag("ingest.py", PRODUCER)
    write_dag(
        "either.py",
        """
        from datetime import datetime
        from orchestrator import DAG, Asset, AssetOrTimeSchedule, task

        with DAG("either", schedule=AssetOrTimeSchedule("@daily", [Asset("warehouse://sales/daily")]),
                 start_date=datetime(2026, 1, 1)) as dag:
            @task
            def t(ctx):
                pass
        """,
    )
    harness.parse()
    store = harness.store
    harness.tick()
    kinds = {r.run_type for r in store.list_runs("either")}
    assert kinds == {"scheduled"}
    store.emit_asset_event("warehouse://sales/daily", {}, harness.clock.now())
    harness.tick()
    assert {r.run_type for r in store.list_runs("either")} == {"scheduled", "asset_triggered"}
    assert store.get_dag("either").schedule.startswith("cron 0 0 * * * (UTC) or assets:")


def test_cli_assets_emit_list_show_events_and_dags_why(harness, write_dag, settings, monkeypatch,
                                                       capsys):  # fmt: skip
    from orchestrator.cli import main

    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    _setup(harness, write_dag)
    capsys.readouterr()
    assert main(["assets", "emit", "warehouse://sales/daily", "--extra", '{"rows": 3}']) == 0
    out = capsys.readouterr().out
    assert "recorded for warehouse://sales/daily; queued for: report" in out
    assert main(["assets", "list", "--json"]) == 0
    listed = {a["uri"]: a for a in json.loads(capsys.readouterr().out)}
    assert listed["warehouse://sales/daily"]["consumers"] == ["report"]
    assert listed["warehouse://sales/daily"]["events"] == 1
    assert main(["assets", "show", "warehouse://sales/daily"]) == 0
    out = capsys.readouterr().out
    assert "producers: ingest.archive, ingest.load" in out and "emitted by cli:" in out
    assert main(["assets", "events", "--json"]) == 0
    [event] = json.loads(capsys.readouterr().out)
    assert event["extra"] == {"rows": 3} and event["emitter"].startswith("cli:")
    assert main(["assets", "events", "--run", "no-such-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["dags", "why", "report"]) == 0
    out = capsys.readouterr().out
    assert "[assets_waiting] waiting for costs: no event yet; sales arrived" in out
    assert "manual only" not in out
    # bad input: one line, exit 1, nothing stored
    assert main(["assets", "emit", "warehouse://nope"]) == 1
    assert "unknown asset 'warehouse://nope'" in capsys.readouterr().err
    assert main(["assets", "emit", "warehouse://sales/daily", "--extra", "[1]"]) == 1
    assert "--extra: expected a JSON object" in capsys.readouterr().err
    assert main(["assets", "emit", "nope"]) == 1
    assert "'nope' is not an asset URI" in capsys.readouterr().err
    assert main(["assets", "show", "424242"]) == 1
    assert len(harness.store.asset_events()) == 1


def test_a_dag_no_longer_scheduled_on_an_asset_drops_its_queued_events(harness, write_dag):
    _setup(harness, write_dag)
    store, now = harness.store, harness.clock.now()
    store.emit_asset_event("warehouse://sales/daily", {}, now)
    write_dag("report.py", CONSUMER.format(schedule="[costs]", misfire="coalesce"))
    harness.parse()
    waits = store.asset_waits("report", store.current_spec("report"))
    assert [(w.uri, w.queued) for w in waits] == [("warehouse://costs/daily", 0)]
    with store.read() as conn:
        assert conn.execute(select(func.count()).select_from(m.asset_queue)).scalar() == 0
    assert store.get_asset("warehouse://sales/daily").consumers == ()


def test_an_http_task_with_an_outlet_records_its_event_when_it_succeeds(harness, write_dag):
    from tests.integration.test_http_tasks import Server

    server = Server()
    try:
        write_dag(
            "hook.py",
            f"""
            from orchestrator import DAG, Asset

            feed = Asset("api://partner/feed")
            with DAG("hook", schedule=None) as dag:
                dag.http("ok", "{server.base}/hook", outlets=[feed])
                dag.http("bad", "{server.base}/status/500", outlets=[feed])
            """,
        )
        harness.parse()
        run = harness.store.trigger_run("hook", harness.clock.now())
        assert harness.run_until_finished(run.run_id).state == "failed"
    finally:
        server.close()
    [event] = harness.store.asset_events("api://partner/feed")
    assert (event.source_task_id, event.source_run_id) == ("ok", run.run_id)
