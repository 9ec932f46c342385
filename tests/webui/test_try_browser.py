"""The task page's try tabs and traceback toggle, and the Gantt chart's unfolding, in a
real browser (chromium driven by Playwright), on a run the real worker ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401
from tests.webui.test_try_pages import flaky_run  # noqa: F401


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_try_tabs_and_the_full_traceback_toggle(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    flaky_run,  # noqa: F811
    tmp_path: Path,
):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            assert page.goto(f"{live_url}/runs/{flaky_run.run_id}/tasks/load").status == 200
            one, two = page.locator("section#try-1"), page.locator("section#try-2")
            expect(two).to_be_visible()  # the latest try is shown first
            expect(one).to_be_hidden()
            expect(two.locator(".try-facts dd.exit-reason")).to_have_text("succeeded")

            page.locator("#log-tab-1").click()
            expect(one).to_be_visible()
            expect(two).to_be_hidden()
            expect(page.locator("#log-tab-1")).to_have_attribute("aria-selected", "true")
            expect(one.locator(".try-facts dd.exit-reason")).to_have_text("failed, retried")
            first = one.locator(".frames li").first
            expect(first).to_contain_text("parse_rows")
            expect(first).to_contain_text("return int(text)")

            full = one.locator("details.full-traceback pre")
            expect(full).to_be_hidden()  # the orchestrator's frames wait behind the toggle
            one.locator("details.full-traceback summary").click()
            expect(full).to_be_visible()
            expect(full).to_contain_text("orchestrator/engine/runner.py")

            # the tries table stays inside its card: nothing wider than the page's main
            page.set_viewport_size({"width": 760, "height": 900})
            main = page.locator("main").bounding_box()
            table = page.locator(".table-wrap").bounding_box()
            assert table["x"] + table["width"] <= main["x"] + main["width"] + 1
            page.screenshot(path=str(tmp_path / "task.png"), full_page=True)
            assert errors == []
        finally:
            browser.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_gantt_unfolds_a_mapped_task_and_folds_a_group(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    flaky_run,  # noqa: F811
    tmp_path: Path,
):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            assert page.goto(f"{live_url}/runs/{flaky_run.run_id}").status == 200
            svg = page.locator("svg.gantt")
            rows = svg.locator("g.gantt-row:not([display='none'])")
            expect(rows).to_have_count(6)  # extract, load, report, its 3 tasks
            expect(svg.locator("g.gantt-instance:not([display='none'])")).to_have_count(0)
            height = float(svg.get_attribute("height"))
            summary = svg.locator("g.gantt-row[data-task-id='report.summary']")
            before = summary.get_attribute("transform")

            toggle = svg.locator("g.gantt-mapped[data-task-id='report.square'] .gantt-toggle")
            toggle.click()
            expect(toggle).to_have_attribute("aria-expanded", "true")
            shown = svg.locator("g.gantt-instance:not([display='none'])")
            expect(shown).to_have_count(3)  # one row per instance
            expect(rows).to_have_count(9)
            assert [shown.nth(i).get_attribute("data-task-id") for i in range(3)] == [
                "report.square[0]", "report.square[1]", "report.square[2]",
            ]  # fmt: skip
            assert float(svg.get_attribute("height")) == height + 3 * 26
            assert summary.get_attribute("transform") != before  # pushed down, not overlapped
            boxes = [shown.nth(i).bounding_box()["y"] for i in range(3)]
            assert boxes == sorted(boxes) and len(set(boxes)) == 3
            page.screenshot(path=str(tmp_path / "gantt.png"), full_page=True)

            # the instance's label opens that instance's page
            shown.nth(1).locator("a").click()
            expect(page).to_have_url(
                f"{live_url}/runs/{flaky_run.run_id}/tasks/report.square/map/1"
            )
            page.go_back()

            group = page.locator("svg.gantt g.gantt-group[data-task-id='report'] .gantt-toggle")
            expect(page.locator("svg.gantt g.gantt-row:not([display='none'])")).to_have_count(6)
            group.click()  # the group's rows fold away
            expect(group).to_have_attribute("aria-expanded", "false")
            expect(page.locator("svg.gantt g.gantt-row:not([display='none'])")).to_have_count(3)
            group.press("Enter")  # and open again from the keyboard
            expect(page.locator("svg.gantt g.gantt-row:not([display='none'])")).to_have_count(6)
            assert errors == []
        finally:
            browser.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_gantts_segment_colours_follow_the_theme(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    flaky_run,  # noqa: F811
):
    from playwright.sync_api import sync_playwright

    def fills(page) -> dict[str, str]:
        return page.evaluate(
            """() => Object.fromEntries(["queued", "backoff"].map(k => [k,
                getComputedStyle(document.querySelector("svg.gantt rect.bar-" + k)).fill]))"""
        )

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(color_scheme="light")
            page.goto(f"{live_url}/runs/{flaky_run.run_id}")
            light = fills(page)
            page.emulate_media(color_scheme="dark")
            dark = fills(page)
            assert light["queued"] != dark["queued"] and light["backoff"] != dark["backoff"]
            assert light["queued"] != light["backoff"]  # distinct kinds, distinct colours
        finally:
            browser.close()
