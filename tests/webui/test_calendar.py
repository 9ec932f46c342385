"""The calendar of a DAG's daily run outcomes over a year (issue 27 item 8): days in
the DAG's timezone, the worst outcome's colour, counts per state, year navigation, a
bad year refused, and a day's runs shown on a click in a real browser."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag
from tests.webui.conftest import START
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401


def _runs(store):
    """A Berlin DAG: two runs on 2026-03-03 local (one at 23:30 UTC the day before),
    one failed; one success on 2026-07-01; one in 2025."""
    with DAG("berlin", schedule=None, timezone="Europe/Berlin") as dag:

        @task
        def work():
            pass

    store.save_dag(serialize_dag(dag), START)
    made = []
    for when in (
        datetime(2026, 3, 2, 23, 30, tzinfo=UTC),  # 00:30 on the 3rd in Berlin
        datetime(2026, 3, 3, 9, 0, tzinfo=UTC),
        datetime(2026, 7, 1, 12, 0, tzinfo=UTC),
        datetime(2025, 12, 31, 12, 0, tzinfo=UTC),
    ):
        made.append(store.trigger_run("berlin", START, logical_date=when))
    return made


def _day(html: str, day: str) -> str:
    found = re.search(rf'<button type="button" class="day state-([a-z_]+)" data-day="{day}" '
                      r'data-text="([^"]*)"', html)  # fmt: skip
    assert found, day
    return f"{found.group(1)}|{found.group(2)}"


def test_the_calendar_counts_runs_per_day_of_the_dags_timezone(client, store):
    _runs(store)
    html = client.get("/dags/berlin/calendar?year=2026").get_data(as_text=True)
    state, text = _day(html, "2026-03-03").split("|")
    assert (state, text) == ("queued", "2026-03-03: 2 queued")  # 00:30 and 10:00 in Berlin
    assert _day(html, "2026-03-02").split("|")[1] == "2026-03-02: no run"
    assert _day(html, "2026-07-01").split("|")[1].startswith("2026-07-01: 1 ")
    assert "3 run(s) by logical date, days in Europe/Berlin" in html
    assert html.count('class="day ') == 365
    older = client.get("/dags/berlin/calendar?year=2025").get_data(as_text=True)
    assert "1 run(s)" in older and _day(older, "2025-12-31").split("|")[1].startswith(
        "2025-12-31: 1 "
    )
    assert 'href="/dags/berlin/calendar"' in client.get("/dags/berlin").get_data(as_text=True)


def test_a_failed_run_colours_its_day_and_the_api_gives_the_counts(client, store, clock):
    made = _runs(store)
    store.start_queued_runs(START)
    # fail the 09:00 run through its task: claim and fail its only try
    claims = store.claim("w", START, timedelta(seconds=30), limit=10)
    [claim] = [c for c in claims if c.run_id == made[1].run_id]
    store.finish_failure(claim, "boom", None, START)
    store.finish_ready_runs(START)
    html = client.get("/dags/berlin/calendar?year=2026").get_data(as_text=True)
    state, text = _day(html, "2026-03-03").split("|")
    assert state == "failed" and "1 failed" in text
    body = client.get("/api/v1/dags/berlin/calendar?year=2026").get_json()
    assert body["timezone"] == "Europe/Berlin" and body["year"] == 2026
    assert body["days"]["2026-03-03"]["failed"] == 1
    assert sum(body["days"]["2026-03-03"].values()) == 2
    assert set(body["days"]) == {"2026-03-03", "2026-07-01"}


@pytest.mark.parametrize("year", ["x", "1969", "99999", "2026.5"])
def test_a_bad_year_is_a_400_naming_it(client, store, year):
    _runs(store)
    r = client.get(f"/dags/berlin/calendar?year={year}")
    assert r.status_code == 400 and "year" in r.get_data(as_text=True)
    assert client.get(f"/api/v1/dags/berlin/calendar?year={year}").status_code == 400
    assert client.get("/dags/nope/calendar").status_code == 404


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_click_on_a_day_shows_its_runs(chromium_path, live_url, store):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    _runs(store)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(live_url + "/dags/berlin")
            page.get_by_role("link", name="runs per day over a year").click()
            page.get_by_role("link", name="← 2025").click()
            expect(page.locator("h1")).to_contain_text("Calendar 2025")
            page.get_by_role("link", name="2026 →").click()
            info = page.locator(".calendar-day")
            page.locator('button.day[data-day="2026-07-01"]').click()
            expect(info).to_have_text(re.compile(r"^2026-07-01: 1 [a-z]+$"))
            expect(page.locator("button.day.chosen")).to_have_count(1)
            page.locator('button.day[data-day="2026-03-02"]').click()
            expect(info).to_have_text("2026-03-02: no run")
            assert errors == []
        finally:
            browser.close()
