"""The watchers page in a real browser (issue 30): the nav link, a watcher's state,
messages and rejects, and a deferred task linking to its task page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webui.conftest import START
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_watchers_page_in_a_real_browser(chromium_path, live_url, store, tmp_path: Path):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    key = "s3://lake/orders#redis:orders"
    store.sync_watchers(
        [{"key": key, "asset_uri": "s3://lake/orders", "kind": "redis", "conn_id": "bus",
          "source": "orders", "spec": {"group": "orchestrator"}}], START)  # fmt: skip
    store.set_watcher_state(key, "retrying", START, error="ConnectionError: refused <b>x</b>")
    store.reject_message(key, "message is not JSON", START)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            assert page.goto(live_url + "/").status == 200
            page.get_by_role("link", name="Watchers").click()
            expect(page.locator("h1")).to_have_text("Watchers")
            row = page.locator("table.watchers tbody tr").first
            expect(row).to_contain_text("s3://lake/orders")
            expect(row.locator(".watcher-state")).to_contain_text("retrying")
            expect(row.locator(".watcher-rejected")).to_have_text("1")
            expect(row).to_contain_text("ConnectionError: refused <b>x</b>")  # escaped text
            expect(page.locator("table.watchers b")).to_have_count(0)
            expect(page.get_by_text("No task is deferred.")).to_be_visible()
            page.screenshot(path=str(tmp_path / "watchers.png"), full_page=True)
            assert errors == []
        finally:
            browser.close()
