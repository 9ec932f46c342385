"""The asset lineage graph (issue 27 item 8): producer DAGs -> assets -> consumer DAGs
with each asset's last event, focused on one DAG on request, in the page, the API and a
real browser."""

from __future__ import annotations

import re

import pytest

from orchestrator import DAG, Asset, task
from orchestrator.authoring.spec import serialize_dag
from tests.webui.conftest import START
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401


def _lineage_dags(store):
    """ingest -> sales -> report <- costs; and apart: <b>x</b> -> odd -> audit."""
    sales = Asset("warehouse://sales/daily", name="sales")
    costs = Asset("warehouse://costs/daily", name="costs")
    odd = Asset("s3://odd/<b>x</b>", name="<script>alert(1)</script>")
    with DAG("ingest", schedule=None) as ingest:

        @task(outlets=[sales])
        def load():
            pass

    with DAG("report", schedule=[sales, costs]) as report:

        @task
        def build():
            pass

    with DAG("exporter", schedule=None) as exporter:

        @task(outlets=[odd])
        def export():
            pass

    with DAG("audit", schedule=[odd]) as audit:

        @task
        def check():
            pass

    for dag in (ingest, report, exporter, audit):
        store.save_dag(serialize_dag(dag), START)
    store.emit_asset_event("warehouse://sales/daily", {}, START, emitter="cli:ada@host")
    return {a.uri: a for a in store.list_assets()}


def _nodes(html: str) -> list[str]:
    return re.findall(r'data-node="([^"]+)"', html)


def test_the_lineage_page_draws_producers_assets_and_consumers(client, store):
    assets = _lineage_dags(store)
    sales = assets["warehouse://sales/daily"]
    html = client.get("/assets/lineage").get_data(as_text=True)
    assert sorted(_nodes(html)) == sorted(
        ["dag:ingest", "dag:report", "dag:exporter", "dag:audit"]
        + [f"asset:{a.id}" for a in assets.values()]
    )
    assert f'data-source="dag:ingest" data-target="asset:{sales.id}"' in html
    assert f'data-source="asset:{sales.id}" data-target="dag:report"' in html
    assert "last 2026-" in html and "no event yet" in html
    assert f'href="/assets/{sales.id}"' in html and 'href="/dags/report"' in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="/assets/lineage"' in client.get("/assets").get_data(as_text=True)


def test_focus_keeps_what_is_connected_to_one_dag_and_a_bad_focus_is_a_400(client, store):
    assets = _lineage_dags(store)
    html = client.get("/assets/lineage?dag=report").get_data(as_text=True)
    assert sorted(_nodes(html)) == sorted(
        ["dag:ingest", "dag:report"]
        + [f"asset:{assets[u].id}" for u in ("warehouse://sales/daily", "warehouse://costs/daily")]
    )
    bad = client.get("/assets/lineage?dag=<nope>")
    assert bad.status_code == 400
    body = bad.get_data(as_text=True)
    assert "query parameter &#39;dag&#39;" in body or "query parameter 'dag'" in body
    assert "<nope>" not in body


def test_the_api_gives_the_same_graph(client, store):
    assets = _lineage_dags(store)
    body = client.get("/api/v1/assets/lineage").get_json()
    sales = assets["warehouse://sales/daily"]
    assert {"source": "dag:ingest", "target": f"asset:{sales.id}"} in body["edges"]
    by_id = {n["id"]: n for n in body["nodes"]}
    assert by_id[f"asset:{sales.id}"]["uri"] == "warehouse://sales/daily"
    assert by_id[f"asset:{sales.id}"]["last_event_at"].startswith("2026-")
    assert by_id["dag:audit"] == {"id": "dag:audit", "kind": "dag", "dag_id": "audit"}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_lineage_graph_in_a_real_browser(chromium_path, live_url, store):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    assets = _lineage_dags(store)
    sales = assets["warehouse://sales/daily"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(live_url + "/assets")
            page.get_by_role("link", name="Lineage graph").click()
            nodes = page.locator("svg.lineage a.lineage-node")
            expect(nodes).to_have_count(7)
            # choosing a DAG keeps only what is connected to it (the select submits)
            page.locator("select[name=dag]").select_option("audit")
            expect(page).to_have_url(re.compile(r"/assets/lineage\?dag=audit$"))
            expect(nodes).to_have_count(3)
            page.locator("select[name=dag]").select_option("")
            expect(nodes).to_have_count(7)
            # an asset's box opens the asset
            page.locator(f'svg.lineage a[data-node="asset:{sales.id}"]').click()
            expect(page.locator("h1")).to_have_text("Asset sales")
            assert errors == []
        finally:
            browser.close()
