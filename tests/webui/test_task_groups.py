"""Task groups in the web UI (issue 14 item 5): the graph draws a group as one box that
opens on click, the grid folds a group's rows under a header row. The markup through
the Flask test client, the clicks in a real browser."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator import DAG, TaskGroup, task
from orchestrator.authoring.spec import serialize_dag
from tests.webui.conftest import START, set_run_state
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401
from webui import task_groups


def _grouped(store) -> str:
    with DAG("grouped", schedule=None) as dag:
        start = task(task_id="start")(lambda ctx: None)
        with TaskGroup("extract") as extract:
            a = task(task_id="a")(lambda ctx: None)
            b = task(task_id="b")(lambda ctx: None)
            a >> b
            with TaskGroup("inner"):
                task(task_id="c")(lambda ctx: None)
        end = task(task_id="end")(lambda ctx: None)
        start >> extract >> end
    store.save_dag(serialize_dag(dag), START)
    run = store.trigger_run("grouped", START, logical_date=START)
    set_run_state(store, run.run_id, "running", START)
    return run.run_id


def _shot(page, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    if os.environ.get("ORCHESTRATOR_SCREENSHOT_DIR"):
        (Path(os.environ["ORCHESTRATOR_SCREENSHOT_DIR"]) / path.name).write_bytes(path.read_bytes())


def test_group_state_and_boxes_are_pure():
    assert task_groups.group_state(["success", "skipped"]) == "success"
    assert task_groups.group_state(["success", "failed", "running"]) == "failed"
    assert task_groups.group_state([]) == "none"
    assert task_groups.ancestors("a.b.c") == ["a", "a.b", "a.b.c"]

    class N:
        def __init__(self, id, x, y):
            self.id, self.x, self.y, self.w, self.h = id, x, y, 100, 30

    nodes = [N("g.a", 100, 100), N("g.h.b", 300, 200), N("t", 0, 0)]
    outer, inner = task_groups.boxes(nodes, {"g.a": "g", "g.h.b": "g.h"})
    assert (outer.path, inner.path) == ("g", "g.h")
    assert outer.x < inner.x and outer.y < inner.y  # the outer box holds the inner one
    assert outer.x + outer.w > inner.x + inner.w and outer.y + outer.h > inner.y + inner.h
    assert outer.tasks == ("g.a", "g.h.b") and inner.tasks == ("g.h.b",)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_graph_and_grid_markup_group_their_tasks(client, store):
    run_id = _grouped(store)
    html = client.get("/dags/grouped").get_data(as_text=True)
    # issue 27: a closed group is a node of its own, with its state and task count,
    # wired by edges with arrowheads; its tasks are not drawn
    assert 'class="node group-node state-scheduled" data-group-node="extract"' in html
    assert 'data-expand="extract"' in html and ">[3]</text>" in html
    assert 'data-task-id="extract.a"' not in html and 'data-group-node="extract.inner"' not in html
    assert 'data-source="start" data-target="extract"' in html
    assert 'data-source="extract" data-target="end"' in html
    # opened: its tasks in a box whose label closes it; the nested group a node of its own
    open_ = client.get("/dags/grouped?expand=extract").get_data(as_text=True)
    assert 'class="group-box expanded state-scheduled" data-group="extract"' in open_
    assert 'data-group="extract" data-state="scheduled" data-expand=""' in open_
    assert 'data-task-id="extract.a" data-state="scheduled" data-group="extract"' in open_
    assert 'data-group-node="extract.inner"' in open_
    assert 'data-expand="extract,extract.inner"' in open_
    both = client.get("/dags/grouped?expand=extract,extract.inner").get_data(as_text=True)
    assert 'data-task-id="extract.inner.c"' in both and "data-group-node" not in both
    # a nested group without its parent stays closed; an unknown one is a 400 naming it
    alone = client.get("/dags/grouped?expand=extract.inner").get_data(as_text=True)
    assert 'data-group-node="extract"' in alone
    bad = client.get("/dags/grouped?expand=extract,<b>nope</b>")
    assert bad.status_code == 400
    body = bad.get_data(as_text=True)
    assert "query parameter" in body and "expand" in body and "<b>nope" not in body
    # the grid: a header row for each group, its tasks' rows after it, folded
    assert html.index('<tr class="group-row collapsed" data-group="extract">') < html.index(
        'title="extract.a"'
    )
    assert 'class="group-member hidden-in-group" data-group="extract.inner"' in html
    assert html.index('title="extract.inner.c"') < html.index('title="end"')
    # the JSON API names each task's group
    tasks = {
        t["task_id"]: t["group"] for t in client.get("/api/v1/dags/grouped").get_json()["tasks"]
    }
    assert tasks["extract.inner.c"] == "extract.inner" and tasks["start"] is None
    # the run page draws the same group node, and opens it the same way
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert 'data-group-node="extract"' in page
    assert 'data-task-id="extract.b"' in client.get(f"/runs/{run_id}?expand=extract").get_data(
        as_text=True
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_group_node_and_a_grid_group_open_on_click_in_a_real_browser(
    chromium_path,  # noqa: F811
    live_url,  # noqa: F811
    store,
    tmp_path: Path,
):
    from playwright.sync_api import expect, sync_playwright

    _grouped(store)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            assert page.goto(live_url + "/dags/grouped").status == 200
            nodes = page.locator("svg.graph g.node")
            group = page.locator('svg.graph .group-node[data-group-node="extract"]')
            a = page.locator('svg.graph .node[data-task-id="extract.a"]')
            expect(nodes).to_have_count(3)  # start, the extract group, end
            expect(group).to_be_visible()
            expect(group).to_have_attribute("aria-expanded", "false")
            expect(a).to_have_count(0)
            _shot(page, tmp_path / "task_groups_closed.png")
            group.click()
            expect(a).to_be_visible()
            expect(page).to_have_url(f"{live_url}/dags/grouped?expand=extract")
            expect(nodes).to_have_count(5)  # start, a, b, the inner group, end
            inner = page.locator('svg.graph .group-node[data-group-node="extract.inner"]')
            expect(inner).to_be_visible()  # nested: a node, still closed
            inner.click()
            expect(page.locator('svg.graph .node[data-task-id="extract.inner.c"]')).to_be_visible()
            expect(nodes).to_have_count(5)  # the inner group's node became its one task
            _shot(page, tmp_path / "task_groups_open.png")
            label = page.locator('svg.graph .group-box[data-group="extract"] .group-label')
            label.focus()
            page.keyboard.press("Enter")  # the label closes it, the inner group with it
            expect(a).to_have_count(0)
            expect(nodes).to_have_count(3)
            expect(page).to_have_url(f"{live_url}/dags/grouped")

            header = page.locator('.grid tr.group-row[data-group="extract"] th')
            member = page.locator('.grid th.task-name[title="extract.a"]')
            expect(header).to_be_visible()
            expect(member).to_be_hidden()
            header.click()
            expect(member).to_be_visible()
            expect(page.locator('.grid th.task-name[title="extract.inner.c"]')).to_be_hidden()
            page.locator('.grid tr.group-row[data-group="extract.inner"] th').click()
            expect(page.locator('.grid th.task-name[title="extract.inner.c"]')).to_be_visible()
            header.click()
            expect(member).to_be_hidden()
            _shot(page, tmp_path / "task_groups_grid.png")
            assert errors == []
        finally:
            browser.close()


def test_doctests_of_the_group_pieces():
    import doctest

    assert doctest.testmod(task_groups).failed == 0


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_task_page_says_a_task_waits_for_its_past(client, store):
    from datetime import timedelta

    with DAG("past", schedule=None) as dag:
        task(task_id="t", depends_on_past=True)(lambda ctx: None)
    store.save_dag(serialize_dag(dag), START)
    runs = []
    for i in range(2):
        at = START + timedelta(hours=i)
        run = store.trigger_run("past", at, logical_date=at)
        set_run_state(store, run.run_id, "running", at)
        runs.append(run)
    page = client.get(f"/runs/{runs[1].run_id}/tasks/t").get_data(as_text=True)
    assert "depends_on_past: waiting for t in the previous run" in page
    assert runs[0].run_id in page
    first = client.get(f"/runs/{runs[0].run_id}/tasks/t").get_data(as_text=True)
    assert "depends_on_past" not in first  # the first run does not wait


def test_the_layout_keeps_a_groups_members_together():
    from webui.graph_layout import cluster_groups

    groups = {"g.x": "g", "g.h.y": "g.h", "g.z": "g"}
    layer = ["a", "g.x", "b", "g.h.y", "c", "g.z"]
    assert cluster_groups([layer], groups) == [["a", "b", "g.x", "g.h.y", "g.z", "c"]]
    assert cluster_groups([layer], {}) == [layer]  # no groups: the order as it was
