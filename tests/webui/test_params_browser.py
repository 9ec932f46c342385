"""The typed trigger form in a real browser (Chromium via Playwright, issue 25): a widget
per param type, filled and submitted the way a user does it; the browser holds back an
out-of-range number and invalid JSON, and the run gets the typed conf."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from orchestrator import DAG, Param, task
from orchestrator.authoring.spec import serialize_dag
from tests.webui.live import live_server
from tests.webui.test_browser import CHROMIUM_ARGS, START, chromium_path  # noqa: F401


@pytest.fixture
def live_url(app) -> Iterator[str]:
    with live_server(app) as url:
        yield url


def _typed_dag() -> dict:
    params = {
        "mode": Param("delta", enum=["delta", "full"], description="how much to reload"),
        "limit": Param(100, type="integer", minimum=1, maximum=1000, title="Row limit"),
        "day": Param("2026-01-01", type="string", format="date", description="the day"),
        "full": Param(False, type="boolean"),
        "opts": Param({"a": 1}, type="object", description="extra options"),
        "to": Param(type="string", format="email", description="who gets the report"),
    }
    with DAG("typed", schedule=None, params=params) as dag:

        @task
        def show(ctx):
            return ctx.params

    return serialize_dag(dag)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_typed_trigger_form_is_filled_and_triggers_a_run(
    chromium_path,  # noqa: F811
    live_url,
    store,
    tmp_path,
):
    from playwright.sync_api import expect, sync_playwright

    store.save_dag(_typed_dag(), START)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(live_url + "/dags/typed")
            page.locator("#trigger summary").click()
            form = page.locator("#trigger form")
            expect(form).to_be_visible()

            # a widget per type, each with its description
            expect(form.locator("select#param-mode option")).to_have_count(2)
            limit = form.locator("input#param-limit")
            expect(limit).to_have_attribute("type", "number")
            expect(limit).to_have_attribute("min", "1")
            expect(limit).to_have_attribute("max", "1000")
            expect(form.locator("label[for=param-limit]")).to_contain_text("Row limit")
            expect(form.locator("input#param-day")).to_have_attribute("type", "date")
            expect(form.locator("input#param-full")).to_have_attribute("type", "checkbox")
            expect(form.locator("textarea#param-opts")).to_have_value('{\n "a": 1\n}')
            for text in ("how much to reload", "the day", "extra options", "who gets the report"):
                expect(form).to_contain_text(text)

            # fill it in as a user does
            form.locator("select#param-mode").select_option(label="full")
            limit.fill("5000")  # over the maximum
            form.locator("input#param-day").fill("2026-03-01")
            form.locator("input#param-full").check()
            form.locator("input#param-to").fill("ops@example.com")
            opts = form.locator("textarea#param-opts")
            opts.fill('{"a": ')  # not JSON yet
            expect(form.locator("[data-param=opts] .json-status")).to_contain_text("not valid JSON")
            form.locator("button[type=submit]").click()
            # the browser held the form back: out of range, invalid JSON
            assert page.url.endswith("/dags/typed")
            assert limit.evaluate("e => e.validity.rangeOverflow") is True
            assert opts.evaluate("e => e.validity.customError") is True
            assert store.list_runs("typed") == []

            limit.fill("12")
            opts.fill('{"a": 2, "b": [true]}')
            expect(form.locator("[data-param=opts] .json-status")).to_have_text("valid JSON")
            opts.blur()  # pretty-printed
            expect(opts).to_have_value('{\n "a": 2,\n "b": [\n  true\n ]\n}')
            page.screenshot(path=str(tmp_path / "typed_form.png"))
            with page.expect_navigation():
                form.locator("button[type=submit]").click()
            assert re.search(r"/runs/[^/]+$", page.url), page.url
            expect(page.locator("body")).to_contain_text("Triggered")
            [run] = store.list_runs("typed")
            assert run.conf == {
                "mode": "full", "limit": 12, "day": "2026-03-01", "full": True,
                "opts": {"a": 2, "b": [True]}, "to": "ops@example.com",
            }  # fmt: skip
            assert errors == []
        finally:
            browser.close()


def _plain_dag(dag_id: str, **kw) -> dict:
    with DAG(dag_id, schedule=None, params={"n": 1}, **kw) as dag:

        @task
        def show(ctx):
            return ctx.conf

    return serialize_dag(dag)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_more_conf_is_checked_as_json_and_reaches_the_run(
    chromium_path,  # noqa: F811
    live_url,
    store,
):
    """Issue 26: the trigger form's JSON object for keys that are not params (Airflow's
    configuration JSON); a strict_conf DAG's form has none."""
    from playwright.sync_api import expect, sync_playwright

    store.save_dag(_plain_dag("loose"), START)
    store.save_dag(_plain_dag("strict", strict_conf=True), START)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(live_url + "/dags/strict")
            page.locator("#trigger summary").click()
            expect(page.locator("#trigger form input#param-n")).to_be_visible()
            expect(page.locator("#trigger textarea#conf-extra")).to_have_count(0)

            page.goto(live_url + "/dags/loose")
            page.locator("#trigger summary").click()
            form = page.locator("#trigger form")
            extra = form.locator("textarea#conf-extra")
            expect(extra).to_be_visible()
            expect(form).to_contain_text("keys that are not params")
            extra.fill('{"region": ')
            status = form.locator("[data-param=conf_extra] .json-status")
            expect(status).to_contain_text("not valid JSON")
            form.locator("button[type=submit]").click()
            assert page.url.endswith("/dags/loose")  # held back by the browser
            assert store.list_runs("loose") == []

            extra.fill('{"region": "eu", "tags": ["a"]}')
            expect(status).to_have_text("valid JSON")
            form.locator("input#param-n").fill("4")
            with page.expect_navigation():
                form.locator("button[type=submit]").click()
            assert re.search(r"/runs/[^/]+$", page.url), page.url
            [run] = store.list_runs("loose")
            assert run.conf == {"region": "eu", "tags": ["a"], "n": 4}
            assert errors == []
        finally:
            browser.close()
