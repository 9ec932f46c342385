"""The log viewer and the durations in a real browser (chromium driven by Playwright),
issue 27: tabs, search, level filter, wrap, download, live follow; 38 ms and 3 m 04 s."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.webui.conftest import LOG_TRY_1, START
from tests.webui.test_browser import CHROMIUM_ARGS, chromium_path, live_url  # noqa: F401


@pytest.fixture
def browser_page(chromium_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            yield page
            assert errors == []  # no CSP violations, no JS errors
        finally:
            browser.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_log_tabs_search_level_wrap_and_download(
    browser_page,
    live_url,  # noqa: F811
    timed_run,
    tmp_path: Path,
):
    from playwright.sync_api import expect

    page = browser_page
    run = timed_run()
    assert page.goto(f"{live_url}/runs/{run.run_id}/tasks/load").status == 200
    one, two = page.locator("#try-1"), page.locator("#try-2")
    expect(two).to_be_visible()  # the latest try's tab is open
    expect(one).to_be_hidden()
    expect(two.locator("pre.log")).to_contain_text("loading row 40")

    page.locator(".log-tab[data-try='1']").click()  # switching tabs shows that try's log
    expect(one).to_be_visible()
    expect(two).to_be_hidden()
    expect(one.locator("pre.log")).to_contain_text("ValueError: boom")
    expect(page.locator(".log-tab[data-try='1']")).to_have_attribute("aria-selected", "true")
    expect(one.locator(".log-line").nth(3)).to_have_attribute("data-n", "4")
    expect(one.locator(".ansi-fg-3")).to_have_text("slow disk")  # coloured, not raw
    expect(one.locator("pre.log b")).to_have_count(0)  # the log's "<b>" stays text

    search = page.locator(".log-search")
    search.fill("BOOM")
    expect(one.locator("mark.hit")).to_have_count(1)
    expect(one.locator("mark.hit")).to_have_text("boom")
    expect(one.locator(".log-line.has-hit")).to_have_attribute("data-n", "4")
    expect(page.locator(".log-hits")).to_contain_text("1 of 1 match")
    search.fill("(x+)+$")  # a pattern is searched as text: no match, no error
    expect(one.locator("mark.hit")).to_have_count(0)
    expect(page.locator(".log-hits")).to_have_text("no match in the lines shown")
    search.fill("")

    debug = one.locator(".log-line[data-level='debug']")
    warning = one.locator(".log-line[data-level='warning']")
    expect(debug).to_be_visible()
    page.locator(".log-level").select_option("warning")
    expect(debug).to_be_hidden()
    expect(warning).to_be_visible()
    page.locator(".log-level").select_option("error")
    expect(warning).to_be_hidden()
    expect(one.locator(".log-line[data-level='error']")).to_have_count(2)
    expect(one.locator(".log-line[data-level='error']").first).to_be_visible()
    page.locator(".log-level").select_option("debug")
    expect(debug).to_be_visible()

    pre = one.locator("pre.log")
    assert pre.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"
    page.locator(".log-wrap").uncheck()
    assert pre.evaluate("e => getComputedStyle(e).whiteSpace") == "pre"
    page.locator(".log-wrap").check()
    assert pre.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"

    with page.expect_download() as got:
        one.locator(".log-download").click()
    download = got.value
    assert download.suggested_filename.endswith("__load__try1.log")
    assert Path(download.path()).read_bytes() == LOG_TRY_1.encode()  # raw, ANSI and all
    page.screenshot(path=str(tmp_path / "log_viewer.png"), full_page=True)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_durations_at_their_scale_in_a_real_browser(
    browser_page,
    live_url,  # noqa: F811
    timed_run,
):
    from playwright.sync_api import expect

    page = browser_page
    run = timed_run()
    assert page.goto(f"{live_url}/runs/{run.run_id}").status == 200
    expect(page.locator('tr[data-task-id="extract"] td').nth(4)).to_have_text("38 ms")
    expect(page.locator('tr[data-task-id="load"] td').nth(4)).to_have_text("3 m 04 s")
    assert page.goto(f"{live_url}/runs/{run.run_id}/tasks/load").status == 200
    expect(page.locator("table.tries tbody tr").nth(1).locator("td").nth(4)).to_have_text(
        "3 m 04 s"
    )
    started = page.locator("table.tries tbody tr").nth(1).locator("td").nth(2).locator("time")
    expect(started).to_have_attribute("title", "2026-01-01 02:00:00 UTC")  # UTC on hover


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_running_try_is_followed_until_it_ends(
    browser_page,
    live_url,  # noqa: F811
    timed_run,
    store,
    settings,
):
    from playwright.sync_api import expect

    page = browser_page
    run = timed_run()
    claim = timed_run.running  # archive: claimed, running, its log being written
    log = Path(settings.log_dir) / claim.log_path
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("2026-01-01 00:00:11,000 INFO starting archive\n")
    assert page.goto(f"{live_url}/runs/{run.run_id}/tasks/archive").status == 200
    pre = page.locator("#try-1 pre.log")
    expect(pre).to_have_attribute("data-running", "1")
    expect(page.locator("#try-1 .following")).to_be_visible()
    with log.open("a") as f:
        f.write("2026-01-01 00:00:12,000 INFO half a li")
    with log.open("a") as f:
        f.write("ne, then whole\n2026-01-01 00:00:13,000 ERROR \x1b[31mdisk full\x1b[0m\n")
    expect(pre.locator(".log-line")).to_have_count(3, timeout=10_000)
    expect(pre.locator(".log-line").nth(1)).to_have_text(
        "2026-01-01 00:00:12,000 INFO half a line, then whole\n"
    )
    expect(pre.locator(".log-line").nth(2)).to_have_attribute("data-n", "3")
    expect(pre.locator(".ansi-fg-1")).to_have_text("disk full")
    store.finish_success(claim, None, START + timedelta(seconds=20))
    expect(pre).to_have_attribute("data-running", "0", timeout=10_000)  # polling stopped
    expect(page.locator("#try-1 .following")).to_have_count(0)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_10_mb_log_opens_at_its_end_and_pages_back(
    browser_page,
    live_url,  # noqa: F811
    timed_run,
    store,
    settings,
):
    from playwright.sync_api import expect

    page = browser_page
    run = timed_run()
    [t] = [t for t in store.tries(run.run_id, "load") if t.try_number == 2]
    big = "".join(f"2026-01-01 02:00:02,000 INFO row {i:08d} {'x' * 80}\n" for i in range(110_000))
    Path(settings.log_dir, t.log_path).write_text(big)  # 13 MB
    assert page.goto(f"{live_url}/runs/{run.run_id}/tasks/load").status == 200
    pre = page.locator("#try-2 pre.log")
    expect(pre.locator(".log-line").last).to_have_attribute("data-n", "110000")
    shown = pre.locator(".log-line").count()
    assert 0 < shown < 1000  # one page of lines, not 110,000
    first = int(pre.locator(".log-line").first.get_attribute("data-n"))
    page.locator("#try-2 .log-load-earlier").click()
    expect(pre.locator(".log-line")).to_have_count(shown * 2)
    expect(pre.locator(".log-line").first).to_have_attribute("data-n", str(first - shown))
    expect(pre.locator(".log-line").first).to_contain_text(f"row {first - shown - 1:08d}")

    page.locator(".log-search").fill("row 00000007 ")
    expect(page.locator(".log-hits")).to_have_text("no match in the lines shown")
    page.locator("#try-2 .log-search-all").click()  # the whole log, on the server
    found = page.locator("#try-2 .log-results li")
    expect(found).to_have_count(1)
    expect(found).to_contain_text("row 00000007 xxx")
    assert found.evaluate("e => e.value") == 8  # its line number
