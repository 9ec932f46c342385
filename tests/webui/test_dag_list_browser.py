"""The DAG list in a real browser (chromium driven by Playwright), issue 27 item 7: the
state filter hides rows, a column header reorders them, a page link shows the next page,
and bulk pause pauses the checked DAGs (and only those)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.webui.conftest import START
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401


@pytest.fixture
def browser_page(chromium_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            yield page
            assert errors == []  # no CSP violations, no JS errors
        finally:
            browser.close()


def row_ids(page) -> list[str]:
    return page.locator("tr.dag-row").evaluate_all("rows => rows.map(r => r.dataset.dagId)")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_filter_sort_pages_and_bulk_pause(
    browser_page,
    live_url,  # noqa: F811
    store,
    make_dag,
    make_runs,
    set_next_fire,
):
    from playwright.sync_api import expect

    for dag_id in ("alpha", "bravo", "charlie"):
        make_dag(dag_id)
    make_runs("bravo", ["failed"])
    make_runs("charlie", ["success"])
    set_next_fire("alpha", START + timedelta(days=2))
    set_next_fire("charlie", START + timedelta(days=1))
    page = browser_page
    assert page.goto(live_url + "/").status == 200
    assert row_ids(page) == ["alpha", "bravo", "charlie"]

    page.locator(".state-filter").select_option("failed")  # the filter hides rows
    page.locator(".filters button[type=submit]").click()
    expect(page.locator("tr.dag-row")).to_have_count(1)
    assert row_ids(page) == ["bravo"]
    expect(page.locator("#dag-alpha")).to_have_count(0)
    page.locator(".state-filter").select_option("")
    page.locator(".filters button[type=submit]").click()
    expect(page.locator("tr.dag-row")).to_have_count(3)

    page.locator("a.sort-link[data-sort='next_run']").click()  # sorting reorders
    expect(page.locator("a.sort-link[data-sort='next_run']")).to_have_attribute(
        "aria-sort", "ascending"
    )
    assert row_ids(page) == ["charlie", "alpha", "bravo"]
    page.locator("a.sort-link[data-sort='next_run']").click()
    expect(page.locator("a.sort-link[data-sort='next_run']")).to_have_attribute(
        "aria-sort", "descending"
    )
    assert row_ids(page) == ["alpha", "charlie", "bravo"]  # no next run: still last

    page.goto(live_url + "/?per_page=2")  # a page link shows the next page
    assert row_ids(page) == ["alpha", "bravo"]
    page.locator("a.page-next").click()
    expect(page.locator(".pager")).to_contain_text("page 2 of 2")
    assert row_ids(page) == ["charlie"]
    expect(page.locator("a.page-next")).to_have_count(0)
    page.locator("a.page-prev").click()
    assert row_ids(page) == ["alpha", "bravo"]

    page.goto(live_url + "/")  # bulk pause pauses the checked DAGs
    page.locator("input[name=dag_id][value=alpha]").check()
    page.locator("input[name=dag_id][value=charlie]").check()
    page.locator("button.bulk-pause").click()
    expect(page.locator(".flash-ok")).to_contain_text("2 DAGs paused: alpha, charlie.")
    expect(page.locator("#dag-alpha")).to_have_class("dag-row is-paused")
    expect(page.locator("#dag-charlie")).to_have_class("dag-row is-paused")
    expect(page.locator("#dag-bravo")).to_have_class("dag-row")
    assert {d.dag_id: d.is_paused for d in store.list_dags()} == {
        "alpha": True, "bravo": False, "charlie": True,
    }  # fmt: skip
    page.locator("input.check-all").check()  # every DAG shown, then unpause them all
    expect(page.locator("input[name=dag_id]:checked")).to_have_count(3)
    page.locator("button.bulk-unpause").click()
    expect(page.locator(".flash-ok")).to_contain_text("2 DAGs unpaused")
    assert not any(d.is_paused for d in store.list_dags())
