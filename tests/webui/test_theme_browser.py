"""Dark mode in a real browser (chromium driven by Playwright), issue 27 item 8: the
page follows the emulated prefers-color-scheme, the toggle switches the colours and its
choice outlives a reload (localStorage)."""

from __future__ import annotations

import pytest

from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401

LIGHT_BG = "rgb(246, 247, 249)"  # --bg in style.css
DARK_BG = "rgb(15, 20, 27)"


def _colours(page) -> tuple[str, str, str]:
    return page.evaluate(
        """() => {
          const body = getComputedStyle(document.body);
          const table = document.querySelector('.table');
          return [body.backgroundColor, body.color, getComputedStyle(table).backgroundColor];
        }"""
    )


@pytest.fixture
def chromium(chromium_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dark_mode_follows_the_system_and_the_toggle_persists(
    chromium,
    live_url,  # noqa: F811
    make_dag,
):
    make_dag("nightly_report")
    context = chromium.new_context(color_scheme="light")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    assert page.goto(live_url + "/").status == 200
    light = _colours(page)
    assert light[0] == LIGHT_BG

    page.emulate_media(color_scheme="dark")  # the system setting changes: the page follows
    dark = _colours(page)
    assert dark[0] == DARK_BG
    assert dark[1] != light[1] and dark[2] != light[2]  # text and panels too, not only the body
    page.emulate_media(color_scheme="light")
    assert _colours(page) == light

    toggle = page.locator(".theme-toggle")
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    assert _colours(page) == dark
    assert toggle.get_attribute("aria-pressed") == "true"
    assert page.evaluate("localStorage.getItem('orchestrator-theme')") == "dark"

    page.reload()  # the choice is kept, over the light system setting, on every page
    assert _colours(page) == dark
    page.goto(live_url + "/dags/nightly_report")
    assert _colours(page)[0] == DARK_BG
    page.locator(".theme-toggle").click()  # back to light, even on a dark system
    page.emulate_media(color_scheme="dark")
    assert _colours(page)[0] == LIGHT_BG
    assert page.evaluate("localStorage.getItem('orchestrator-theme')") == "light"
    assert errors == []  # no CSP violations, no JS errors
    context.close()
