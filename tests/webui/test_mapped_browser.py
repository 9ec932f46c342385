"""A mapped run's graph and grid in a real browser (chromium driven by Playwright)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401
from tests.webui.test_mapped_pages import mapped_run  # noqa: F401


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_mapped_runs_graph_and_grid_in_a_real_browser(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    mapped_run,  # noqa: F811
    tmp_path: Path,
):
    from playwright.sync_api import expect, sync_playwright

    run_id = mapped_run.run_id
    screenshot = tmp_path / "mapped_run.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            assert page.goto(f"{live_url}/runs/{run_id}").status == 200
            node = page.locator('g.node.mapped[data-task-id="load"]')
            expect(node).to_have_count(1)
            expect(node).to_have_attribute("data-map-counts", "1 failed, 149 success")
            expect(node.locator("text.map-count")).to_have_text("[150]")
            expect(page.locator('tr[data-task-id="load"]')).to_have_count(1)
            page.screenshot(path=str(screenshot), full_page=True)
            node.locator("a").click()  # the node opens the instance list
            expect(page).to_have_url(f"{live_url}/runs/{run_id}/tasks/load/instances")
            expect(page.locator("tr[data-map-index]")).to_have_count(100)
            page.locator('a[rel="next"]').click()
            expect(page.locator("tr[data-map-index]")).to_have_count(50)

            assert page.goto(f"{live_url}/dags/mapped_ui").status == 200
            cell = page.locator("a.cell.mapped")
            expect(cell).to_have_count(1)
            expect(cell).to_have_attribute("data-state", "failed")
            cell.click()  # the grid cell opens the instance list too
            expect(page).to_have_url(f"{live_url}/runs/{run_id}/tasks/load/instances")
            page.locator('a.state-filter[data-state="failed"]').click()
            expect(page.locator("tr[data-map-index]")).to_have_count(1)
            page.locator('tr[data-map-index="7"] a').click()
            expect(page).to_have_url(f"{live_url}/runs/{run_id}/tasks/load/map/7")
            expect(page.locator("h1 .map-index")).to_have_text("[7]")
            expect(page.locator("pre.log").first).to_contain_text("loading part-7.csv")
            assert errors == []
        finally:
            browser.close()
    assert screenshot.stat().st_size > 0
