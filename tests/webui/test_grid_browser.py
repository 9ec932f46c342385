"""The grid's run heads and filters in a real browser (chromium driven by Playwright)."""

from __future__ import annotations

import pytest

from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401
from tests.webui.test_grid_pages import typed_runs  # noqa: F401


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_grid_filters_runs_and_its_cells_open_their_instance(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    typed_runs,  # noqa: F811
    tmp_path,
):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            assert page.goto(f"{live_url}/dags/etl").status == 200
            heads = page.locator("table.grid th.run-head")
            expect(heads).to_have_count(4)
            # the bars: the 60 s run's is twice the 30 s run's, on screen
            bars = page.locator("table.grid th.run-head .run-bar rect")
            tall, half = bars.nth(0).bounding_box(), bars.nth(1).bounding_box()
            assert tall["height"] == pytest.approx(2 * half["height"], abs=0.6)
            expect(heads.nth(0).locator(".run-type")).to_have_text("S")
            expect(heads.nth(0).locator(".run-date")).to_have_text("Jan 01 01:00")
            page.locator(".grid-wrap").screenshot(path=str(tmp_path / "grid.png"))

            # the keyboard: arrows move between cells, Enter opens the focused one
            page.locator("table.grid tbody tr").first.locator("a.cell").first.focus()
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowDown")
            focused = page.evaluate("() => document.activeElement.getAttribute('href')")
            assert focused == f"/runs/{typed_runs[1].run_id}/tasks/load"
            page.keyboard.press("ArrowUp")
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("ArrowLeft")  # the first run's cell stays focused
            focused = page.evaluate("() => document.activeElement.getAttribute('href')")
            assert focused == f"/runs/{typed_runs[0].run_id}/tasks/extract"
            page.keyboard.press("ArrowDown")
            page.keyboard.press("Enter")
            expect(page).to_have_url(f"{live_url}/runs/{typed_runs[0].run_id}/tasks/load")
            page.go_back()

            page.select_option("select[name=run_type]", "manual")  # applies at once
            expect(page).to_have_url(f"{live_url}/dags/etl?runs=25&run_state=&run_type=manual")
            expect(heads).to_have_count(2)
            expect(page.locator("table.grid th.run-head[data-run-type='manual']")).to_have_count(2)

            page.select_option("select[name=run_state]", "failed")
            expect(heads).to_have_count(1)
            cell = page.locator("table.grid tbody a.cell").first
            cell.click()  # a cell opens that run's instance of that task
            expect(page).to_have_url(f"{live_url}/runs/{typed_runs[1].run_id}/tasks/extract")
            assert errors == []
        finally:
            browser.close()
