"""The DAG page's grid (issue 27 item 3): a column head per run with its date, run type
and a duration bar; filters by run state and run type; how many runs are shown; each
new query parameter checked with a 400 naming it."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from sqlalchemy import update

from orchestrator.store.core import models as m
from tests.webui.conftest import START


def set_run(store, run_id: str, **values) -> None:
    """Test set-up: what only the scheduler or a backfill would write (a run's type,
    its start and end), set directly in the test database."""
    with store.write() as conn:
        conn.execute(update(m.dag_runs).where(m.dag_runs.c.run_id == run_id).values(**values))


def heads(page: str) -> list[dict[str, str]]:
    """Each run's column head: run id, type, state, bar height, letter, date."""
    out = []
    for m_ in re.finditer(
        r'<th class="run-head" data-run-id="([^"]+)" data-run-type="([^"]+)" '
        r'data-state="([^"]+)">\s*<svg class="run-bar" width="12" height="28" '
        r'aria-hidden="true"><rect class="[^"]*" x="1" y="[\d.]+" width="10" '
        r'height="([\d.]+)" rx="2"><title>([^<]*)</title>.*?'
        r'<span class="run-type" title="[^"]*">(\w)</span>\s*'
        r'<span class="run-date">([^<]+)</span>',
        page,
        re.S,
    ):
        run_id, run_type, state, bar, length, letter, date = m_.groups()
        out.append(dict(run_id=run_id, run_type=run_type, state=state, bar=float(bar),
                        length=length, letter=letter, date=date))  # fmt: skip
    return out


@pytest.fixture
def typed_runs(store, make_dag, make_runs):
    """Four runs of etl (Europe/Berlin), an hour apart: a scheduled success of 60 s, a
    manual failure of 30 s, a backfill success of 15 s, a running manual one."""
    make_dag("etl", timezone="Europe/Berlin")
    runs = make_runs("etl", ["success", "failed", "success", "running"])
    kinds = ["scheduled", "manual", "backfill", "manual"]
    lengths = [60, 30, 15, None]
    for run, kind, seconds in zip(runs, kinds, lengths, strict=True):
        start = run.logical_date + timedelta(seconds=5)
        end = None if seconds is None else start + timedelta(seconds=seconds)
        set_run(store, run.run_id, run_type=kind, start_date=start, end_date=end)
    return [store.get_run(r.run_id) for r in runs]


def test_each_run_column_shows_its_date_type_and_a_bar_as_long_as_it_ran(client, typed_runs, clock):
    clock.advance(hours=3, seconds=20)  # the running one started 15 s ago
    page = client.get("/dags/etl").get_data(as_text=True)
    found = heads(page)
    assert [h["run_id"] for h in found] == [r.run_id for r in typed_runs]  # oldest left
    assert [h["letter"] for h in found] == ["S", "M", "B", "M"]
    assert [h["date"] for h in found] == [
        "Jan 01 01:00",
        "Jan 01 02:00",
        "Jan 01 03:00",
        "Jan 01 04:00",
    ]
    # bars proportional to the durations, the longest at full height (28 px)
    assert [h["bar"] for h in found] == [28.0, 14.0, 7.0, 7.0]
    assert [h["length"] for h in found] == ["1 m 00 s", "30 s", "15 s", "15 s so far"]


def test_the_grid_filters_by_run_type_and_state_and_keeps_the_filter(client, typed_runs):
    manual = heads(client.get("/dags/etl?run_type=manual").get_data(as_text=True))
    assert [h["run_type"] for h in manual] == ["manual", "manual"]
    failed = client.get("/dags/etl?run_state=failed").get_data(as_text=True)
    assert [h["run_id"] for h in heads(failed)] == [typed_runs[1].run_id]
    # a cell still opens that run's task instance; selecting a run keeps the filter
    assert f'href="/runs/{typed_runs[1].run_id}/tasks/extract"' in failed
    assert f'href="/dags/etl?run_id={typed_runs[1].run_id}&amp;run_state=failed#graph"' in failed
    both = heads(client.get("/dags/etl?run_type=manual&run_state=running").get_data(as_text=True))
    assert [h["run_id"] for h in both] == [typed_runs[3].run_id]
    blank = client.get("/dags/etl?runs=&run_state=&run_type=").get_data(as_text=True)
    assert len(heads(blank)) == 4  # the form's "any": no filter
    none = client.get("/dags/etl?run_type=asset_triggered").get_data(as_text=True)
    assert heads(none) == [] and "No run of this DAG is of any state and asset triggered" in none
    assert '<option value="asset_triggered" selected>asset triggered</option>' in none


def test_runs_shown_takes_25_50_100_or_365(client, store, make_dag):
    make_dag("many")
    for i in range(60):
        store.trigger_run(
            "many", START + timedelta(minutes=i), logical_date=START + timedelta(minutes=i)
        )
    assert len(heads(client.get("/dags/many").get_data(as_text=True))) == 25
    page = client.get("/dags/many?runs=50").get_data(as_text=True)
    assert len(heads(page)) == 50 and '<option value="50" selected>50</option>' in page
    assert len(heads(client.get("/dags/many?runs=100").get_data(as_text=True))) == 60


@pytest.mark.parametrize(
    "query, words",
    [
        ("runs=30", "query parameter 'runs': expected one of 25, 50, 100, 365, got '30'"),
        ("runs=-1", "query parameter 'runs'"),
        ("runs=1e3", "query parameter 'runs'"),
        ("run_state=bogus", "query parameter 'run_state': 'bogus' is not a run state"),
        ("run_state=up_for_retry", "query parameter 'run_state'"),  # a task state, not a run's
        ("run_type=%3Cscript%3E", "query parameter 'run_type': '<script>' is not a run type"),
    ],
)
def test_a_bad_grid_parameter_is_a_400_naming_it(client, make_dag, query, words):
    make_dag("etl")
    response = client.get(f"/dags/etl?{query}")
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert words in html.unescape(text)
    assert "<script>" not in text.replace('<script src="/static/', "")  # escaped


def test_the_grid_api_takes_the_same_filters(client, typed_runs):
    body = client.get("/api/v1/dags/etl/grid?run_type=manual&run_state=failed").get_json()
    assert [r["run_id"] for r in body["dag_runs"]] == [typed_runs[1].run_id]
    assert body["dag_runs"][0]["cells"]["extract"]["state"]  # the run's cells, as before
    every = client.get("/api/v1/dags/etl/grid").get_json()
    assert len(every["dag_runs"]) == 4
    bad = client.get("/api/v1/dags/etl/grid?run_type=adhoc")
    assert bad.status_code == 400
    assert "query parameter 'run_type': 'adhoc' is not a run type" in bad.get_json()["detail"]
