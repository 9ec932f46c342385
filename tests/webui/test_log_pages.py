"""The log viewer's server side: the task page's tabs and lines, the log API's pages,
search and its bad input, the raw download; durations on the pages (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webui.conftest import LOG_TRY_1, LOG_TRY_2


def _api(run, task="load", n=1):
    return f"/api/v1/runs/{run.run_id}/tasks/{task}/tries/{n}/log"


def test_the_task_page_has_a_tab_and_numbered_levelled_lines_per_try(client, timed_run):
    run = timed_run()
    html = client.get(f"/runs/{run.run_id}/tasks/load").get_data(as_text=True)
    assert html.count('role="tab"') == 2 and 'data-try="2" aria-controls="try-2"' in html
    assert 'aria-selected="true">Try 2' in html  # the latest try is the one shown
    one = html.split('id="try-1"')[1].split("</section>")[0]
    assert one.count('class="log-line"') == 5
    assert '<span class="log-line" data-n="4" data-level="error">' in one
    assert '<span class="log-line" data-n="5" data-level="error">' in one  # the traceback
    assert '<span class="ansi-fg-3">slow disk</span> &lt;b&gt;not bold&lt;/b&gt;' in one
    assert "\x1b" not in html
    assert f'href="/runs/{run.run_id}/tasks/load/tries/1/log.txt" download' in one


def test_durations_read_at_their_scale_on_the_pages(client, timed_run):
    run = timed_run()
    run_page = client.get(f"/runs/{run.run_id}").get_data(as_text=True)
    extract = run_page.split('data-task-id="extract"><td>')[1].split("</tr>")[0]
    assert ">38 ms</td>" in extract  # was "0s"
    load = run_page.split('data-task-id="load"><td>')[1].split("</tr>")[0]
    assert ">3 m 04 s</td>" in load
    assert '<time datetime="2026-01-01T02:00:00+00:00" title="2026-01-01 02:00:00 UTC">' in load
    task = client.get(f"/runs/{run.run_id}/tasks/load").get_data(as_text=True)
    assert ">4.0 s</td>" in task and ">3 m 04 s</td>" in task  # try 1 and try 2


def test_times_show_in_the_dags_zone_with_utc_on_hover(client, timed_run):
    run = timed_run("berlin_pipeline", timezone="Europe/Berlin")
    html = client.get(f"/runs/{run.run_id}/tasks/load").get_data(as_text=True)
    assert (
        '<time datetime="2026-01-01T02:00:00+00:00" title="2026-01-01 02:00:00 UTC">'
        "2026-01-01 03:00:00 CET</time>"
    ) in html  # try 2's start


def test_the_log_api_pages_whole_numbered_lines(client, timed_run):
    run = timed_run()
    body = client.get(_api(run, n=2) + "?format=html").get_json()
    assert body["first_line"] == 1 and body["next_line"] == 43
    assert body["text"] == LOG_TRY_2 and body["offset"] == 0
    assert body["html"].count('class="log-line"') == 42
    assert '<span class="ansi-fg-2">done</span>' in body["html"]
    follow = client.get(_api(run, n=2) + f"?format=html&offset={body['next_offset']}&line=43")
    assert follow.get_json()["html"] == "" and follow.get_json()["finished"] is True
    middle = len(LOG_TRY_2) // 2
    earlier = client.get(_api(run, n=2) + f"?format=html&before={middle}").get_json()
    assert LOG_TRY_2.startswith(earlier["text"]) and earlier["text"].endswith("\n")
    assert earlier["first_line"] == 1


def test_the_old_raw_text_api_is_unchanged(client, timed_run):
    run = timed_run()
    body = client.get(_api(run)).get_json()
    assert body["text"] == LOG_TRY_1 and body["offset"] == 0 and "html" not in body


def test_search_finds_the_lines_of_the_whole_log_as_plain_text(client, timed_run):
    run = timed_run()
    body = client.get(_api(run, n=2) + "?q=ROW 4").get_json()
    assert [m["line"] for m in body["matches"]] == [5, 41]  # rows 4 and 40
    assert body["matches"][0]["text"].endswith("loading row 4")
    assert client.get(_api(run) + "?q=.*").get_json()["matches"] == []
    colour = client.get(_api(run) + "?q=slow disk <b>").get_json()["matches"]
    assert colour == [{"line": 3, "text": LOG_TRY_1.splitlines()[2].replace("\x1b[33m", "")
                       .replace("\x1b[0m", "")}]  # fmt: skip


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("format=xml", "'format'"),
        ("offset=-1", "'offset'"),
        ("offset=abc", "'offset'"),
        ("before=1e3", "'before'"),
        ("line=0", "'line'"),
        ("offset=1&before=5", "'before'"),
        ("q=", "'q'"),
        ("q=" + "x" * 201, "'q'"),
        ("q=%07x", "'q'"),  # a control character (NUL is refused before any view)
    ],
)
def test_bad_log_parameters_are_a_400_naming_them(client, timed_run, query, named):
    run = timed_run()
    response = client.get(_api(run) + "?" + query)
    assert response.status_code == 400
    assert named in response.get_json()["detail"]


def test_download_gives_the_raw_text(client, timed_run, settings):
    run = timed_run()
    response = client.get(f"/runs/{run.run_id}/tasks/load/tries/1/log.txt")
    assert response.status_code == 200 and response.mimetype == "text/plain"
    assert response.get_data() == LOG_TRY_1.encode()  # ANSI codes and all, as written
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith("attachment; filename=") and "__load__try1.log" in disposition
    assert client.get(f"/runs/{run.run_id}/tasks/load/tries/9/log.txt").status_code == 404
    archive = client.get(f"/runs/{run.run_id}/tasks/archive/tries/1/log.txt")
    assert archive.status_code == 404  # it has a try but no log


def test_a_10_mb_log_page_sends_only_its_last_page(client, timed_run, settings, store):
    run = timed_run()
    [t] = [t for t in store.tries(run.run_id, "load") if t.try_number == 2]
    big = "".join(f"2026-01-01 02:00:02,000 INFO row {i:08d} {'x' * 80}\n" for i in range(110_000))
    Path(settings.log_dir, t.log_path).write_text(big)
    assert len(big) > 10_000_000
    html = client.get(f"/runs/{run.run_id}/tasks/load").get_data(as_text=True)
    assert len(html) < 400_000  # the last 64 KB of lines, not 10 MB
    two = html.split('id="try-2"')[1].split("</section>")[0]
    assert 'data-n="110000"' in two and "row 00109999" in two
    assert "Load earlier lines" in two
    assert client.get(_api(run, n=2) + "?q=row 00000007 ").get_json()["matches"][0]["line"] == 8
