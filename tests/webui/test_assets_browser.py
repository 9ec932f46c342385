"""The assets pages in a real browser (issue 15): list -> asset -> triggered run."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.webui.conftest import START
from tests.webui.test_assets_pages import _asset_dags, _produce
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_assets_pages_in_a_real_browser(chromium_path, live_url, store, tmp_path: Path):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    _asset_dags(store)
    _produce(store)
    store.emit_asset_event("warehouse://costs/daily", {"rows": 7}, START, emitter="cli:ada@host")
    assert store.create_asset_runs(START + timedelta(seconds=3)) == 1
    [run] = [r for r in store.list_runs("report") if r.run_type == "asset_triggered"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            assert page.goto(live_url + "/").status == 200
            page.get_by_role("link", name="Assets").click()
            expect(page.locator("h1")).to_have_text("Assets")
            page.get_by_role("link", name="costs", exact=True).click()
            expect(page.locator("h1")).to_have_text("Asset costs")
            row = page.locator("table.asset-events tbody tr").first
            expect(row).to_contain_text("emitted by cli:ada@host")
            expect(row).to_contain_text('{"rows": 7}')
            row.get_by_role("link", name=run.run_id).click()
            expect(page).to_have_url(f"{live_url}/runs/{run.run_id}")
            page.goto(live_url + "/dags/ingest")
            mark = page.locator("svg.graph g.node.has-outlets circle.outlet-mark")
            expect(mark).to_have_count(1)
            page.screenshot(path=str(tmp_path / "assets.png"), full_page=True)
            assert errors == []
        finally:
            browser.close()
