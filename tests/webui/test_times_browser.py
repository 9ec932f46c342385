"""Durations and times in a real browser (issue 27 item 2): a Berlin DAG's times read in
its zone with UTC in the tooltip, the DAG list says how long ago its last run was,
and no sub-second duration reads ``0s``; following the links keeps the one format."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from tests.helpers import Harness
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401

SOURCE = """
from orchestrator import DAG, task

with DAG("berlin_times", schedule=None, timezone="Europe/Berlin") as dag:
    @task
    def quick():
        return 1

    quick() >> dag.shell("after", "true")
"""

ZONED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CET$")
IN_UTC = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
DURATION = re.compile(r"^(\d+ ms|\d+\.\d s|\d+ s|\d+ m \d\d s)$")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_times_read_in_the_dags_zone_and_durations_at_their_scale(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    store,
    settings,
    clock,
    write_dag,
):
    from playwright.sync_api import expect, sync_playwright

    write_dag("berlin_times.py", SOURCE)
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().dags == 1
        run = store.trigger_run("berlin_times", clock.now())
        run = harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    assert run.state == "success"
    clock.advance(timedelta(minutes=3))  # the page's now: three minutes after the run
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(live_url + "/")
            row = page.locator("tr", has=page.locator('a:text-is("berlin_times")'))
            ago = row.locator("td.last-run time")
            expect(ago).to_have_text("3 min ago")
            assert ZONED.match(ago.get_attribute("title").split(" · ")[0])
            assert IN_UTC.search(ago.get_attribute("title"))
            assert DURATION.match(row.locator(".run-duration").inner_text())
            row.locator("td.last-run a").first.click()  # the run's page
            expect(page).to_have_url(f"{live_url}/runs/{run.run_id}")
            times = page.locator("dl.facts time")
            assert times.count() >= 3  # logical date, interval, start, end
            for i in range(times.count()):
                shown = times.nth(i)
                assert ZONED.match(shown.inner_text()), shown.inner_text()
                assert IN_UTC.match(shown.get_attribute("title")), shown.get_attribute("title")
            duration = page.locator("dl.facts div", has=page.locator('dt:text-is("Duration")'))
            text = duration.locator("dd").inner_text().strip()
            assert DURATION.match(text), text
            assert "0s" not in page.locator("body").inner_text()
            page.locator('svg.graph g.node[data-task-id="quick"] a').click()
            expect(page).to_have_url(f"{live_url}/runs/{run.run_id}/tasks/quick")
            tries = page.locator("table.tries tbody tr").first
            cells = [c.strip() for c in tries.locator("td").all_inner_texts()]
            assert any(DURATION.match(c) for c in cells), cells
            assert "0s" not in page.locator("body").inner_text()
            assert errors == []
        finally:
            browser.close()
