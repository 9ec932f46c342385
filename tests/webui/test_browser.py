"""One real browser (Debian's chromium, driven by Playwright) against the real server.

Skips when /usr/bin/chromium is missing, unless ORCHESTRATOR_REQUIRE_BROWSER=1 (CI),
in which case it fails. The screenshot lands in the test's tmp folder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from webui.server import serve

START = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the fixtures' clock
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium_path() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        if os.environ.get("ORCHESTRATOR_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is required (ORCHESTRATOR_REQUIRE_BROWSER=1)")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture
def live_url(app) -> Iterator[str]:
    stop = threading.Event()
    ready = threading.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    thread = threading.Thread(
        target=serve, args=(app, "127.0.0.1", 0, stop), kwargs={"on_ready": on_ready}
    )
    thread.start()
    try:
        assert ready.wait(10), "the web UI did not start listening"
        yield urls[0]
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dag_list_in_a_real_browser(
    chromium_path, live_url, store, make_dag, make_runs, set_next_fire, tmp_path: Path
):
    from playwright.sync_api import expect, sync_playwright

    make_dag(
        "nightly_report",
        schedule="0 2 * * *",
        timezone="Europe/Berlin",
        start_date=START,
        description="Builds the nightly finance report",
        tags=["finance", "reports"],
    )
    make_dag("adhoc_cleanup", description="Run by hand when the disk fills up", paused=True)
    make_runs("nightly_report", ["success", "success", "failed", "success", "running"])
    set_next_fire("nightly_report", datetime(2026, 1, 2, 1, 0, tzinfo=UTC))
    store.record_import_error("/srv/dags/broken.py", "SyntaxError: invalid syntax", None, START)

    screenshot = tmp_path / "dag_list.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            response = page.goto(live_url + "/")
            assert response is not None and response.status == 200

            row = page.locator("tr#dag-nightly_report")
            expect(row).to_be_visible()
            expect(row.locator("a.dag-id")).to_have_text("nightly_report")
            marks = row.locator("a.mark")
            expect(marks).to_have_count(5)
            expect(marks.nth(2)).to_have_class("mark state-failed")
            expect(marks.nth(4)).to_have_class("mark state-running")
            colour = marks.nth(2).evaluate("e => getComputedStyle(e).backgroundColor")
            assert colour == "rgb(229, 72, 77)"  # the stylesheet loaded under the CSP
            expect(page.locator("tr#dag-adhoc_cleanup .badge-paused")).to_be_visible()
            expect(page.locator(".banner-error a")).to_have_attribute("href", "/import-errors")

            page.screenshot(path=str(screenshot), full_page=True)
            assert errors == []  # no CSP violations, no failed loads
        finally:
            browser.close()
    assert screenshot.stat().st_size > 0
    if os.environ.get("ORCHESTRATOR_SCREENSHOT_DIR"):
        target = Path(os.environ["ORCHESTRATOR_SCREENSHOT_DIR"]) / screenshot.name
        target.write_bytes(screenshot.read_bytes())
