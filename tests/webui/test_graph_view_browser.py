"""The task graph's pan, zoom, fit and minimap in a real browser (issue 27 item 1):
each control changes what the graph shows (its viewBox), a drag pans without following
a link, a click still opens the task, and only a graph of more than 50 nodes gets a
minimap, which moves the view when clicked."""

from __future__ import annotations

import pytest

from orchestrator import DAG
from orchestrator.authoring.spec import serialize_dag
from tests.webui.conftest import START
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401


def _build(store, n: int) -> str:
    with DAG(f"wide_{n}", schedule=None) as dag:
        prev = dag.shell("start", "true")
        for i in range(n):
            prev >> dag.shell(f"part_{i:03d}", "true")
    store.save_dag(serialize_dag(dag), START)
    return dag.dag_id


def _view(page) -> list[float]:
    return [float(x) for x in page.locator("svg.graph").get_attribute("viewBox").split()]


def _view_after(page, old: list[float]) -> list[float]:
    """The viewBox once it differs from ``old`` (wheel and pointer events are handled
    after Playwright returns)."""
    text = " ".join(f"{x:g}" for x in old)
    page.wait_for_function(
        "t => document.querySelector('svg.graph').getAttribute('viewBox') !== t", arg=text
    )
    return _view(page)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_zoom_pan_fit_and_the_minimap_change_what_the_graph_shows(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    store,
):
    from playwright.sync_api import expect, sync_playwright

    big = _build(store, 80)
    small = _build(store, 3)
    run = store.trigger_run(small, START)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{live_url}/dags/{big}")
            svg = page.locator("svg.graph")
            expect(svg).to_have_attribute("data-view-wired", "1")
            full = [float(x) for x in svg.get_attribute("data-full").split()]
            start = _view(page)
            assert start[3] < full[3]  # natural size: 80 nodes in a column do not fit
            page.locator(".graph-toolbar .graph-zoom-in").click()
            zoomed = _view(page)
            assert zoomed[2] == pytest.approx(start[2] / 1.25, rel=0.01)
            page.locator(".graph-toolbar .graph-zoom-out").click()
            page.locator(".graph-toolbar .graph-zoom-out").click()
            assert _view(page)[2] == pytest.approx(start[2] * 1.25, rel=0.01)
            page.locator(".graph-toolbar .graph-fit").click()
            fitted = _view(page)
            assert fitted[2] >= full[2] - 1 and fitted[3] >= full[3] - 1
            # the wheel zooms around the pointer
            svg.scroll_into_view_if_needed()
            box = svg.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.wheel(0, -120)
            assert _view_after(page, fitted)[2] < fitted[2]
            # a drag pans
            page.locator(".graph-toolbar .graph-natural").click()
            before = _view(page)
            page.mouse.move(box["x"] + 300, box["y"] + 300)
            page.mouse.down()
            page.mouse.move(box["x"] + 200, box["y"] + 150, steps=5)
            page.mouse.up()
            after = _view_after(page, before)
            assert after[0] > before[0] and after[1] > before[1]
            assert page.url == f"{live_url}/dags/{big}"  # the drag followed no link
            # the minimap: every node, the shown part outlined, a click moves the view
            mini = page.locator(".graph-minimap")
            expect(mini).to_have_count(1)
            expect(mini.locator("rect.mini-node")).to_have_count(81)
            frame = mini.locator("rect.minimap-view")
            assert float(frame.get_attribute("width")) == pytest.approx(after[2], rel=0.01)
            mini.scroll_into_view_if_needed()
            mbox = mini.bounding_box()
            page.mouse.click(mbox["x"] + mbox["width"] / 2, mbox["y"] + mbox["height"] - 4)
            moved = _view_after(page, after)
            assert moved[1] > after[1]
            # a small graph has no minimap, and a click on a node opens the task
            page.goto(f"{live_url}/runs/{run.run_id}")
            expect(page.locator("svg.graph")).to_have_attribute("data-view-wired", "1")
            expect(page.locator(".graph-minimap")).to_have_count(0)
            page.locator('svg.graph g.node[data-task-id="part_001"] a').click()
            expect(page).to_have_url(f"{live_url}/runs/{run.run_id}/tasks/part_001")
            assert errors == []
        finally:
            browser.close()
