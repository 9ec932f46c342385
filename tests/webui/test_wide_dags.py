"""Wide DAGs: each version is laid out once and kept, the run API does no layout work,
and a wide DAG's pages still list every task (issue 12, item 18)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from conftest import START  # noqa: I001  (tests/webui/conftest.py)

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag
from orchestrator.store.core.records import TaskInstanceRecord, TryRecord
from webui import create_app, data, graph_layout


def wide_dag(dag_id: str, width: int) -> dict:
    """start >> [w_0000 ... w_<width-1>] >> end."""
    with DAG(dag_id, schedule=None, start_date=START) as dag:
        start = task(lambda ctx: None, task_id="start")
        end = task(lambda ctx: None, task_id="end")
        for i in range(width):
            t = task(lambda ctx: None, task_id=f"w_{i:04d}")
            start >> t
            t >> end
    return serialize_dag(dag)


@pytest.fixture
def layout_calls(monkeypatch) -> list[int]:
    """Every graph layout computed, by number of nodes (its first step is spied on, so
    a caller holding its own reference to ``layout`` is counted too)."""
    calls: list[int] = []
    real = graph_layout.layers_of

    def spy(graph):
        calls.append(graph.number_of_nodes())
        return real(graph)

    monkeypatch.setattr(graph_layout, "layers_of", spy)
    return calls


def test_a_version_is_laid_out_once_for_every_page_and_process(
    settings, store, clock, client, layout_calls
):
    store.save_dag(wide_dag("wide", 40), START)
    run = store.trigger_run("wide", START)
    for path in ("/dags/wide", "/dags/wide", f"/runs/{run.run_id}", f"/runs/{run.run_id}"):
        assert client.get(path).status_code == 200
    assert layout_calls == [42]
    other = create_app(settings, store, clock=clock).test_client()  # another web server
    assert 'data-task-id="w_0039"' in other.get("/dags/wide").get_data(as_text=True)
    assert layout_calls == [42]  # read from the version's stored layout


def test_a_stored_layout_of_another_format_is_made_again(store, client, layout_calls):
    store.save_dag(wide_dag("wide", 3), START)
    version = store.get_dag("wide").version_hash
    store.record_layout("wide", version, '{"format": 0}')
    assert client.get("/dags/wide").status_code == 200
    assert layout_calls == [5]
    assert graph_layout.from_json(store.version_layout("wide", version)) is not None


def test_the_run_api_does_no_layout_work(store, client, layout_calls):
    store.save_dag(wide_dag("wide", 5), START)
    run = store.trigger_run("wide", START)
    body = client.get(f"/api/v1/runs/{run.run_id}").get_json()
    assert len(body["task_instances"]) == 7
    assert layout_calls == []


def test_the_run_page_reads_task_instances_and_tries_without_records(
    client, worked_run, monkeypatch
):
    """A record per task instance and per try cost a 10,000-task run page a third of its
    time: the page reads the columns it shows; the run API still returns whole records."""
    run = worked_run()
    api = client.get(f"/api/v1/runs/{run.run_id}").get_json()

    def no_record(cls, row):
        raise AssertionError(f"the run page built a {cls.__name__}")

    for cls in (TaskInstanceRecord, TryRecord):
        monkeypatch.setattr(cls, "from_row", classmethod(no_record))
    response = client.get(f"/runs/{run.run_id}")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    rows = re.findall(r'<tr data-task-id="([^"]+)">', html)
    assert rows == [t["task_id"] for t in api["task_instances"]]  # all, in the DAG's order
    assert html.count('<rect class="bar bar-running ') == len(api["tries"])
    assert "<td><code>worker-1</code></td>" in html  # the worker of a claimed task


def test_a_wide_dags_pages_list_every_task(store, client):
    width = 3_000
    store.save_dag(wide_dag("wide", width), START)
    runs = [store.trigger_run("wide", START + timedelta(minutes=i)) for i in range(2)]
    ids = {"start", "end"} | {f"w_{i:04d}" for i in range(width)}

    html = client.get("/dags/wide").get_data(as_text=True)
    assert set(re.findall(r'<g class="node [^"]+" data-task-id="([^"]+)"', html)) == ids
    rows = re.findall(r'<tr><th class="task-name" title="([^"]+)">', html)
    assert sorted(rows) == sorted(ids)  # the grid: one row per task
    first, latest = (html.count(f'href="/runs/{r.run_id}/tasks/') for r in runs)
    assert (first, latest) == (len(ids), 2 * len(ids))  # cells; and the latest's graph nodes
    columns = data.grid_runs(len(ids))
    assert columns * len(ids) <= data.GRID_CELLS
    assert f"/api/v1/dags/wide/summary?limit={columns}" in html  # polls what it shows

    page = client.get(f"/runs/{runs[0].run_id}").get_data(as_text=True)
    assert len(re.findall(r'<tr data-task-id="([^"]+)">', page)) == len(ids)
    assert set(re.findall(r'<g class="node [^"]+" data-task-id="([^"]+)"', page)) == ids
    grid = client.get(f"/api/v1/dags/wide/grid?limit={columns}").get_json()
    assert len(grid["tasks"]) == len(ids)
    assert all(len(r["cells"]) == len(ids) for r in grid["dag_runs"])


def test_the_grid_shows_fewer_runs_never_fewer_tasks():
    assert data.grid_runs(10) == data.GRID_RUNS
    assert data.grid_runs(10_000) == data.GRID_CELLS // 10_000
    assert data.grid_runs(10**7) == 1


def test_an_open_run_page_polls_a_summary_that_changes_with_the_run(store, client):
    store.save_dag(wide_dag("wide", 50), START)
    run = store.trigger_run("wide", START)
    page = client.get(f"/runs/{run.run_id}").get_data(as_text=True)
    assert f'data-poll="/api/v1/runs/{run.run_id}/summary"' in page
    before = client.get(f"/api/v1/runs/{run.run_id}/summary").get_json()
    assert before["state"] == "queued" and sum(before["task_states"].values()) == 52
    assert "task_instances" not in before  # a few counts, not the run's 52 tasks
    store.start_queued_runs(START)
    store.release_ready(START)
    after = client.get(f"/api/v1/runs/{run.run_id}/summary").get_json()
    assert after != before and after["state"] == "running"
    assert client.get("/api/v1/runs/nope/summary").status_code == 404


def test_an_open_dag_page_polls_a_summary_that_changes_with_its_runs(store, client):
    store.save_dag(wide_dag("wide", 50), START)
    first = store.trigger_run("wide", START)
    url = "/api/v1/dags/wide/summary?limit=25"
    before = client.get(url).get_json()
    assert [r["run_id"] for r in before["dag_runs"]] == [first.run_id]
    assert sum(before["dag_runs"][0]["task_states"].values()) == 52
    store.start_queued_runs(START)
    store.release_ready(START)
    assert client.get(url).get_json() != before
    second = store.trigger_run("wide", START + timedelta(minutes=1))
    runs = client.get(url).get_json()["dag_runs"]
    assert [r["run_id"] for r in runs] == [first.run_id, second.run_id]  # oldest first
    assert client.get("/api/v1/dags/nope/summary").status_code == 404
