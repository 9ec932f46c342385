"""The assets pages and API (issue 15): producers, consumers, events, emits."""

from __future__ import annotations

from datetime import timedelta

from orchestrator import DAG, Asset, task
from orchestrator.authoring.spec import serialize_dag
from tests.webui.conftest import START


def _asset_dags(store):
    sales = Asset("warehouse://sales/daily", name="sales", group="finance")
    costs = Asset("warehouse://costs/daily", name="costs")
    with DAG("ingest", schedule=None) as producer:

        @task(outlets=[sales])
        def load(ctx):
            pass

    with DAG("report", schedule=[sales, costs]) as consumer:

        @task
        def report(ctx):
            pass

    store.save_dag(serialize_dag(producer), START)
    store.save_dag(serialize_dag(consumer), START)
    return {a.uri: a for a in store.list_assets()}


def _produce(store):
    """A run of ingest whose load succeeds through the real transitions."""
    run = store.trigger_run("ingest", START)
    store.start_queued_runs(START)
    [claim] = store.claim("w", START + timedelta(seconds=1), timedelta(seconds=30), limit=5)
    assert store.finish_success(claim, None, START + timedelta(seconds=2))
    return run


def test_assets_page_lists_producers_consumers_and_links_each_asset(client, store):
    assets = _asset_dags(store)
    html = client.get("/assets").get_data(as_text=True)
    assert "sales" in html and "warehouse://sales/daily" in html
    assert "ingest</a>.load" in html and ">report</a>" in html
    sales = assets["warehouse://sales/daily"]
    assert f'/assets/{sales.id}"' in html


def test_asset_page_shows_events_with_their_run_or_emitter_and_triggered_runs(client, store, csrf):
    assets = _asset_dags(store)
    run = _produce(store)
    r = client.post("/api/v1/assets/events", json={"uri": "warehouse://costs/daily",
                    "extra": {"rows": 7}}, headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert r.status_code == 201, r.get_json()
    assert store.create_asset_runs(START + timedelta(seconds=3)) == 1
    [triggered] = [x for x in store.list_runs("report") if x.run_type == "asset_triggered"]
    sales = client.get(f"/assets/{assets['warehouse://sales/daily'].id}").get_data(as_text=True)
    assert run.run_id in sales and "try 1" in sales and triggered.run_id in sales
    costs = client.get(f"/assets/{assets['warehouse://costs/daily'].id}").get_data(as_text=True)
    assert "emitted by api:anonymous@" in costs and '{"rows": 7}' in costs
    assert triggered.run_id in costs
    api = client.get(f"/api/v1/assets/{assets['warehouse://costs/daily'].id}").get_json()
    assert api["consumers"] == ["report"]
    assert api["recent_events"][0]["triggered_runs"] == [triggered.run_id]
    events = client.get("/api/v1/assets/events?uri=warehouse://sales/daily").get_json()["events"]
    assert [e["source_run_id"] for e in events] == [run.run_id]
    listed = client.get("/api/v1/assets").get_json()["assets"]
    assert {a["uri"] for a in listed} == set(assets)


def test_emit_api_refuses_bad_bodies_naming_the_field_and_stores_nothing(client, store, csrf):
    _asset_dags(store)
    h = {"X-CSRF-Token": csrf}
    cases = [
        ({"extra": {}}, 400, "missing field(s) 'uri'"),
        ({"uri": 5}, 400, "uri: expected"),
        ({"uri": "sales"}, 400, "uri: 'sales' is not an asset URI"),
        ({"uri": "warehouse://sales/daily", "extra": [1]}, 400, "extra: expected"),
        ({"uri": "warehouse://sales/daily", "bogus": 1}, 400, "unknown field(s) 'bogus'"),
        ({"uri": "warehouse://nope"}, 404, "unknown asset 'warehouse://nope'"),
    ]
    for body, status, message in cases:
        r = client.post("/api/v1/assets/events", json=body, headers=h)
        assert r.status_code == status, (body, r.get_json())
        assert message in r.get_json()["detail"], (body, r.get_json())
    r = client.post("/api/v1/assets/events", json={"uri": "warehouse://sales/daily"})
    assert r.status_code == 400  # no CSRF token
    assert store.asset_events() == []
    assert client.get("/assets/999999999999999999999").status_code == 404
    assert client.get("/api/v1/assets/12345").status_code == 404


def test_dag_page_shows_the_asset_schedule_and_what_it_waits_for(client, store):
    _asset_dags(store)
    store.emit_asset_event("warehouse://sales/daily", {}, START, emitter="cli:me")
    html = client.get("/dags/report").get_data(as_text=True)
    assert "assets: warehouse://sales/daily &amp; warehouse://costs/daily" in html
    assert "waiting for costs: no event yet; sales arrived 00:00" in html


def test_the_graph_draws_a_task_with_outlets_distinctly(client, store):
    _asset_dags(store)
    html = client.get("/dags/ingest").get_data(as_text=True)
    assert 'has-outlets" data-task-id="load"' in html
    assert "outlets: warehouse://sales/daily" in html
    assert 'class="outlet-mark"' in html
    plain = client.get("/dags/report").get_data(as_text=True)
    assert "has-outlets" not in plain and 'class="outlet-mark"' not in plain


def test_the_dag_list_says_an_asset_schedule_in_words(client, store):
    _asset_dags(store)
    html = client.get("/").get_data(as_text=True)
    assert "when assets update: warehouse://sales/daily &amp; warehouse://costs/daily" in html


def test_an_asset_triggered_runs_page_lists_the_events_it_consumed(client, store):
    _asset_dags(store)
    producer = _produce(store)
    store.emit_asset_event("warehouse://costs/daily", {}, START, emitter="cli:ada@host")
    assert store.create_asset_runs(START + timedelta(seconds=3)) == 1
    [run] = [r for r in store.list_runs("report") if r.run_type == "asset_triggered"]
    html = client.get(f"/runs/{run.run_id}").get_data(as_text=True)
    assert 'id="asset-events"' in html
    assert "warehouse://sales/daily" in html and f"{producer.run_id}</a>.load" in html
    assert "emitted by cli:ada@host" in html
    assert 'id="asset-events"' not in client.get(f"/runs/{producer.run_id}").get_data(as_text=True)


def test_the_dag_api_mirrors_the_asset_schedule_and_outlets(client, store):
    _asset_dags(store)
    store.emit_asset_event("warehouse://sales/daily", {}, START, emitter="cli:me")
    body = client.get("/api/v1/dags/report").get_json()
    assert body["asset_schedule"] == "warehouse://sales/daily & warehouse://costs/daily"
    waits = {w["uri"]: w for w in body["asset_waits"]}
    assert waits["warehouse://sales/daily"]["queued"] == 1
    assert waits["warehouse://costs/daily"]["queued"] == 0
    assert body["asset_reasons"][0]["code"] == "assets_waiting"
    producer = client.get("/api/v1/dags/ingest").get_json()
    assert producer["tasks"][0]["outlets"] == ["warehouse://sales/daily"]
    assert "asset_schedule" not in producer
