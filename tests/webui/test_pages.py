"""The HTML pages through the Flask test client, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sqlalchemy import event

START = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the fixtures' clock
XSS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=\"/static/(app|theme|graph_view)\.js\")")


def marks_of(html: str, dag_id: str) -> list[str]:
    row = re.search(rf'<tr id="dag-{dag_id}".*?</tr>', html, re.S)
    assert row, f"no row for {dag_id}"
    return re.findall(r'class="mark state-([a-z_]+)"', row.group(0))


def test_dag_list_shows_each_active_dag_with_its_facts(client, store, make_dag):
    make_dag(
        "nightly_report",
        schedule="0 2 * * *",
        timezone="Europe/Berlin",
        start_date=datetime(2026, 1, 1),
        description="Builds the nightly report",
        tags=["reports", "finance"],
    )
    make_dag("manual_job", paused=True)
    make_dag("gone")
    store.deactivate_dags(["gone"], START, "file removed")

    html = client.get("/").get_data(as_text=True)

    assert "nightly_report" in html and "manual_job" in html
    assert 'id="dag-gone"' not in html
    assert "Builds the nightly report" in html
    assert "At 02:00, Europe/Berlin" in html
    assert "Manual only" in html
    assert "reports" in html and "finance" in html
    manual_row = re.search(r'<tr id="dag-manual_job".*?</tr>', html, re.S).group(0)
    assert "is-paused" in manual_row and ">paused<" in manual_row
    report_row = re.search(r'<tr id="dag-nightly_report".*?</tr>', html, re.S).group(0)
    assert ">active<" in report_row and "no runs yet" in report_row


def test_next_fire_is_shown_in_the_dags_timezone_and_in_utc(client, make_dag, set_next_fire):
    make_dag("berlin", schedule="30 2 * * *", timezone="Europe/Berlin", start_date=START)
    set_next_fire("berlin", datetime(2026, 7, 1, 0, 30, tzinfo=UTC))

    html = client.get("/").get_data(as_text=True)

    assert "2026-07-01 02:30:00 CEST" in html
    assert "2026-07-01 00:30:00 UTC" in html
    assert 'datetime="2026-07-01T00:30:00+00:00"' in html


def test_run_marks_show_the_last_ten_runs_oldest_first(client, make_dag, make_runs):
    make_dag("etl")
    make_dag("other")
    states = ["failed"] * 3 + ["success"] * 8 + ["failed", "running", "queued"]
    make_runs("etl", states)
    make_runs("other", ["cancelled"])

    html = client.get("/").get_data(as_text=True)

    assert marks_of(html, "etl") == states[-10:]
    assert marks_of(html, "other") == ["cancelled"]


def test_recent_runs_query_returns_records_per_dag(store, make_dag, make_runs):
    make_dag("a")
    make_dag("b")
    runs = make_runs("a", ["success", "failed", "running"])

    marks = store.recent_runs(per_dag=2)

    assert [mk.run_id for mk in marks["a"]] == [runs[1].run_id, runs[2].run_id]
    assert marks["a"][0].logical_date == runs[1].logical_date
    assert marks["a"][0].logical_date.tzinfo is not None
    assert "b" not in marks
    assert store.recent_runs(dag_ids=["b"]) == {}
    assert store.recent_runs(dag_ids=[]) == {}


def test_run_history_count_stops_at_its_cap(store, make_dag, make_runs):
    # counting a DAG's whole history costs O(runs): the page counts up to a cap
    make_dag("a")
    make_runs("a", ["success"] * 5)
    assert store.runs_page("a", state=None, offset=0, limit=2)[1] == 5
    assert store.runs_page("a", state=None, offset=0, limit=2, count_up_to=3)[1] == 4
    assert store.runs_page("a", state=None, offset=0, limit=2, count_up_to=9)[1] == 5


def test_dag_list_query_count_does_not_grow_with_dags(client, store, make_dag, make_runs):
    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    make_dag("first")
    make_runs("first", ["success"])
    event.listen(store.engine, "before_cursor_execute", count)
    try:
        client.get("/")
        with_one = len(statements)
        for i in range(6):
            make_dag(f"more_{i}")
            make_runs(f"more_{i}", ["success", "failed"])
        statements.clear()
        html = client.get("/").get_data(as_text=True)
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    assert marks_of(html, "more_5") == ["success", "failed"]
    # a page of DAGs, their count, their specs (2), their recent runs, the tags and
    # owners, the import errors (issue 27: the count is the pager's)
    assert len(statements) == with_one <= 7


def test_dag_page_lists_recent_runs(client, make_dag, make_runs):
    make_dag("etl", timezone="UTC", description="Extract and load")
    runs = make_runs("etl", ["success", "failed", "queued"])

    response = client.get("/dags/etl")
    html = response.get_data(as_text=True)

    assert response.status_code == 200
    assert "Extract and load" in html
    for run in runs:
        assert f'id="{run.run_id}"' in html
    history = html.split('id="history"')[1]
    assert history.index(runs[2].run_id) < history.index(runs[0].run_id)  # newest first
    assert 'class="pill state-failed"' in html
    assert "manual" in html
    assert 'title="2026-01-01 00:00:05 UTC"' in html  # start of the first run, on hover
    assert "2 m 04 s" in html  # its duration


def test_unknown_dag_is_a_404_page(client):
    response = client.get("/dags/no_such_dag")
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert "no DAG with dag_id &#39;no_such_dag&#39;" in response.get_data(as_text=True)


def test_unknown_path_is_a_404_page(client):
    response = client.get("/nothing/here")
    assert response.status_code == 404
    assert "Back to the DAG list" in response.get_data(as_text=True)


def test_dag_text_is_escaped(client, make_dag):
    make_dag("xss", description=" ".join(XSS), tags=XSS)

    for path in ("/", "/dags/xss"):
        html = client.get(path).get_data(as_text=True)
        for payload in XSS:
            assert payload not in html, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
        assert "<img" not in html and not INLINE_SCRIPT.search(html)


def test_import_errors_show_as_a_banner_and_a_page(client, store, make_dag):
    make_dag("fine")
    store.record_import_error(
        "/dags/broken.py",
        "SyntaxError: invalid syntax (broken.py, line 3)",
        'Traceback (most recent call last):\n  File "/dags/broken.py", line 3\n',
        START,
    )

    html = client.get("/").get_data(as_text=True)
    assert "1 DAG file failed to import." in html
    assert 'href="/import-errors"' in html
    assert 'id="dag-fine"' in html  # the other DAGs are still listed

    page = client.get("/import-errors").get_data(as_text=True)
    assert "/dags/broken.py" in page
    assert "SyntaxError: invalid syntax (broken.py, line 3)" in page
    assert re.search(r"<pre>Traceback \(most recent call last\):\n", page)


def test_no_banner_without_import_errors(client, make_dag):
    make_dag("fine")
    assert "failed to import" not in client.get("/").get_data(as_text=True)
    assert "imported cleanly" in client.get("/import-errors").get_data(as_text=True)


def test_import_error_text_is_escaped(client, store):
    store.record_import_error(
        "/dags/<script>alert(1)</script>.py", XSS[1], "Traceback\n" + XSS[0], START
    )

    page = client.get("/import-errors").get_data(as_text=True)

    for payload in XSS:
        assert payload not in page
    assert "<img" not in page and not INLINE_SCRIPT.search(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_empty_store_shows_a_hint(client):
    html = client.get("/").get_data(as_text=True)
    assert "No DAGs yet" in html


def test_dag_list_shows_the_last_run_how_long_ago_and_its_duration(
    client, clock, make_dag, make_runs
):
    make_dag("etl", timezone="Europe/Berlin")
    make_dag("idle")
    make_runs("etl", ["success", "failed"])  # the last started at 01:00:05, ran 2 m 04 s
    clock.advance(hours=1, minutes=3, seconds=5)
    html = client.get("/").get_data(as_text=True)
    last = html.split('id="dag-etl"')[1].split('class="last-run"')[1].split("</td>")[0]
    assert 'class="pill state-failed"' in last
    assert ">3 min ago</time>" in last
    assert 'title="2026-01-01 02:00:05 CET · 2026-01-01 01:00:05 UTC"' in last  # on hover
    assert '<span class="run-duration">2 m 04 s</span>' in last
    idle = html.split('id="dag-idle"')[1].split('class="last-run"')[1].split("</td>")[0]
    assert "—" in idle
    dag_page = client.get("/dags/etl").get_data(as_text=True)
    history = dag_page.split('id="history"')[1]
    assert ">3 min ago</time>" in history and ">1 h ago</time>" in history
    # the grid's run marks name the run's logical date and how long it ran, on hover
    assert "failed · 2026-01-01 02:00:00 CET · ran 2 m 04 s" in dag_page
