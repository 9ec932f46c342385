"""Roles in a real browser (chromium via Playwright, as test_browser.py): a viewer sees
no action buttons and a POST it forges anyway is refused; an operator's work."""

from __future__ import annotations

import pytest
from conftest import START  # noqa: I001  (tests/webui/conftest.py)
from live import live_server
from test_actions import snapshot
from test_browser import CHROMIUM_ARGS, chromium_path  # noqa: F401  (a fixture)

from webui import create_app

PASSWORD = "long enough password"


def _login(page, base: str, user: str) -> None:
    page.goto(base + "/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_viewer_and_an_operator_in_a_real_browser(
    chromium_path,  # noqa: F811
    settings,
    store,
    clock,
    worked_run,
    live_cluster,
):
    from playwright.sync_api import expect, sync_playwright

    run = worked_run()
    store.add_user("vera", PASSWORD, START, role="viewer")
    store.add_user("otto", PASSWORD, START, role="operator")
    app = create_app(settings, store, clock=clock, login_required=True)
    with live_server(app) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            viewer = browser.new_page()
            errors: list[str] = []
            viewer.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            _login(viewer, base, "vera")
            expect(viewer.locator("tr#dag-pipeline .switch.is-readonly")).to_be_visible()
            expect(viewer.locator("tr#dag-pipeline form")).to_have_count(0)
            viewer.goto(base + "/dags/pipeline")
            expect(viewer.locator("#trigger")).to_have_count(0)
            viewer.goto(base + f"/runs/{run.run_id}/tasks/load")
            expect(viewer.locator("form[action$='/mark']")).to_have_count(0)
            expect(viewer.locator("form[action$='/clear']")).to_have_count(0)
            expect(viewer.locator(".role")).to_have_text("viewer")
            before = snapshot(store)
            status = viewer.evaluate(
                """async () => {
                    const csrf = (await (await fetch('/api/v1/csrf')).json()).csrf_token;
                    const r = await fetch('/api/v1/dags/pipeline/pause', {
                        method: 'POST', body: JSON.stringify({paused: true}),
                        headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf}});
                    return [r.status, (await r.json()).detail];
                }"""
            )
            assert status == [403, "this needs the operator role; vera acts as viewer"]
            assert snapshot(store) == before
            assert [e for e in errors if "403" not in e] == []

            operator = browser.new_page()
            _login(operator, base, "otto")
            switch = operator.locator("tr#dag-pipeline button.switch")
            expect(switch).to_have_attribute("aria-checked", "true")
            switch.click()
            expect(operator.locator("tr#dag-pipeline button.switch")).to_have_attribute(
                "aria-checked", "false"
            )
        finally:
            browser.close()
    assert store.get_dag("pipeline").is_paused
    [event] = store.events(kind="dag_paused")
    assert event.actor == "web:otto"
