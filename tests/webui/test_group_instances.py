"""A mapped task group's instances in the UI and the API (issue 25 item 7): a row per
group instance with each of its tasks' states, linked to each task instance."""

from __future__ import annotations

import pytest

from tests.helpers import Harness

SOURCE = """
from orchestrator import DAG, task, task_group

with DAG("grouped", schedule=None) as dag:
    @task
    def clean(path):
        if path == "bad":
            raise ValueError("bad item")
        return path

    @task(map_index_template="load {{ path }}")
    def load(row):
        return row

    @task_group
    def per_file(path):
        load(clean(path))

    per_file.expand(path=["a", "bad", "c"])
"""


@pytest.fixture
def grouped_run(store, settings, clock, write_dag):
    write_dag("grouped.py", SOURCE)
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().dags == 1
        run = store.trigger_run("grouped", clock.now())
        run = harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    return run


def test_the_group_page_shows_each_instance_with_its_tasks_states(client, grouped_run):
    run_id = grouped_run.run_id
    listing = client.get(f"/runs/{run_id}/tasks/per_file.load/instances").get_data(as_text=True)
    assert f'href="/runs/{run_id}/groups/per_file/instances"' in listing
    html = client.get(f"/runs/{run_id}/groups/per_file/instances").get_data(as_text=True)
    assert "mapped task group: 3 instance(s)" in html
    row = html.split('<tr data-map-index="1">')[1].split("</tr>")[0]
    assert 'data-task-id="per_file.clean"' in row and "failed" in row
    assert "upstream failed" in row or "upstream_failed" in row
    assert f'href="/runs/{run_id}/tasks/per_file.load/map/1"' in row
    first = html.split('<tr data-map-index="0">')[1].split("</tr>")[0]
    assert '<span class="map-name">load a</span>' in first


def test_the_api_mirrors_it_and_an_unknown_group_is_a_404(client, grouped_run):
    run_id = grouped_run.run_id
    body = client.get(f"/api/v1/runs/{run_id}/groups/per_file/instances").get_json()
    assert body["task_ids"] == ["per_file.clean", "per_file.load"]
    assert body["total_entries"] == 3
    assert [i["states"]["per_file.load"] for i in body["instances"]] == [
        "success",
        "upstream_failed",
        "success",
    ]
    assert body["instances"][2]["names"] == {"per_file.load": "load c"}
    for path in ("per_file.clean", "<script>x</script>", "nope"):
        page = client.get(f"/runs/{run_id}/groups/{path}/instances")
        assert page.status_code == 404
        assert "<script>x" not in page.get_data(as_text=True)
        assert client.get(f"/api/v1/runs/{run_id}/groups/{path}/instances").status_code == 404
    assert client.get(f"/runs/{run_id}/groups/per_file/instances?page=x").status_code == 400
