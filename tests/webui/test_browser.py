"""One real browser (Debian's chromium, driven by Playwright) against the real server.

Skips when /usr/bin/chromium is missing, unless ORCHESTRATOR_REQUIRE_BROWSER=1 (CI),
in which case it fails. The screenshot lands in the test's tmp folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.webui.live import live_server

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
    with live_server(app) as url:
        yield url


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
            expect(page.locator("tr#dag-adhoc_cleanup .switch")).to_have_attribute(
                "aria-checked", "false"
            )
            expect(page.locator(".banner-error a")).to_have_attribute("href", "/import-errors")

            page.screenshot(path=str(screenshot), full_page=True)
            assert errors == []  # no CSP violations, no failed loads
        finally:
            browser.close()
    assert screenshot.stat().st_size > 0
    if os.environ.get("ORCHESTRATOR_SCREENSHOT_DIR"):
        target = Path(os.environ["ORCHESTRATOR_SCREENSHOT_DIR"]) / screenshot.name
        target.write_bytes(screenshot.read_bytes())


DEMO_DAG = """
from datetime import datetime, timedelta
from orchestrator import DAG, task

with DAG("daily_sales", schedule="0 2 * * *", timezone="Europe/Berlin",
         start_date=datetime(2026, 1, 1), description="Loads yesterday's sales and reports",
         tags=["finance", "reports"], params={"region": "emea", "limit": 100}) as dag:

    @task
    def extract(ctx):
        ctx.log.info("extracting %s", ctx.params["region"])
        return {"rows": 1200, "region": ctx.params["region"]}

    @task
    def validate(ctx):
        return ctx.upstream("extract")["rows"] > 0

    @task
    def transform(ctx):
        return {"rows": ctx.upstream("extract")["rows"]}

    @task
    def load(ctx):
        return "ok"

    report = dag.shell("report", "echo report for {{ params.region }} on {{ ds }}")
    extract >> [validate, transform]
    [validate, transform] >> load >> report
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone_url(tmp_path: Path) -> Iterator[str]:
    """``orchestrator standalone`` as a real process on a free port, with a demo DAG."""
    import subprocess
    import sys
    import time
    import urllib.request

    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "daily_sales.py").write_text(DEMO_DAG)
    (dags / "broken.py").write_text("from orchestrator import DAG\nDAG(\n")
    port = _free_port()
    env = dict(
        os.environ,
        ORCHESTRATOR_WEB_PORT=str(port),
        ORCHESTRATOR_STATE_DIR=str(tmp_path / "state"),
        ORCHESTRATOR_DAGS_FOLDER=str(dags),
        ORCHESTRATOR_PARSE_INTERVAL="2",
    )
    env.pop("ORCHESTRATOR_DATABASE_URL", None)
    log = open(tmp_path / "standalone.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "standalone"],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp_path / "standalone.log").read_text()
            try:
                with urllib.request.urlopen(url + "/health", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "standalone did not answer in 30 s"
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


def _shots_to(tmp_path: Path, name: str) -> Path:
    return tmp_path / name


def _publish(shot: Path) -> None:
    if os.environ.get("ORCHESTRATOR_SCREENSHOT_DIR"):
        target = Path(os.environ["ORCHESTRATOR_SCREENSHOT_DIR"]) / shot.name
        target.write_bytes(shot.read_bytes())


def test_standalone_in_a_real_browser_trigger_and_watch_it_turn_green(
    chromium_path, standalone_url, tmp_path: Path
):
    from playwright.sync_api import expect, sync_playwright

    base = standalone_url
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(base + "/")
            row = page.locator("tr#dag-daily_sales")
            expect(row).to_be_visible()
            expect(row.locator(".schedule-words")).to_have_text("At 02:00, Europe/Berlin")
            expect(page.locator(".banner-error")).to_contain_text("1 DAG file failed")

            page.click("tr#dag-daily_sales a.dag-id")
            expect(page.locator("h1")).to_have_text("daily_sales")
            page.click("#trigger summary")
            page.fill("input[name='param.region']", "apac")
            page.click("#trigger button[type=submit]")

            expect(page.locator(".flash-ok")).to_contain_text("Triggered daily_sales__manual__")
            expect(page.locator(".run-state")).to_have_attribute(
                "data-state", "success", timeout=90_000
            )
            expect(page.locator("g.node[data-task-id='report']")).to_have_attribute(
                "data-state", "success"
            )
            expect(page.locator("svg.gantt rect.bar-running")).to_have_count(5)
            shot = tmp_path / "run_graph.png"
            page.screenshot(path=str(shot), full_page=True)
            _publish(shot)

            page.click("g.node[data-task-id='report'] a")
            expect(page.locator("pre.code").first).to_contain_text("echo report for apac on ")
            expect(page.locator("pre.log")).to_contain_text("command: echo report for apac")
            page.screenshot(path=str(tmp_path / "task.png"), full_page=True)

            page.goto(base + "/dags/daily_sales")
            expect(page.locator("table.grid a.cell").first).to_be_visible()
            assert page.locator("table.grid a.cell").count() % 5 == 0  # 5 tasks per run
            shot = tmp_path / "dag_page.png"
            page.screenshot(path=str(shot), full_page=True)
            _publish(shot)

            page.goto(base + "/")
            shot = tmp_path / "dag_list.png"
            page.screenshot(path=str(shot), full_page=True)
            _publish(shot)
            for path in ("/events", "/import-errors"):
                assert page.goto(base + path).status == 200
            expect(page.locator(".import-error")).to_contain_text("broken.py")
            assert errors == []  # no CSP violations, no failed loads, no JS errors
        finally:
            browser.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_xss_payloads_stay_inert_in_a_real_browser(chromium_path, live_url, store, settings):
    from playwright.sync_api import sync_playwright
    from test_xss import pages, seed

    run_id = seed(store, settings)
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            for path in pages(run_id):
                assert page.goto(live_url + path).status == 200, path
                page.wait_for_timeout(150)
                injected = page.evaluate(
                    "document.querySelectorAll('img, iframe, object, embed, marquee, math,"
                    " script:not([src]), [onerror], [onload], [onfocus], [onmouseover],"
                    " [ontoggle], [onstart], [autofocus]').length"
                )
                assert injected == 0, path
        finally:
            browser.close()
    assert dialogs == []
