"""Mapped tasks in the web UI: one graph node with counts, one grid cell opening a paged
instance list, a task page and log per instance, and their JSON mirrors."""

from __future__ import annotations

import re

import pytest

from tests.helpers import Harness

SOURCE = """
from orchestrator import DAG, task

with DAG("mapped_ui", schedule=None, params={"n": 150}) as dag:
    @task
    def list_files(ctx):
        return [f"part-{i}.csv" for i in range(ctx.params["n"])]

    @task
    def load(ctx, path):
        ctx.log.info("loading %s", path)
        if path == "part-7.csv":
            raise RuntimeError("part 7 is broken")
        return len(path)

    @task(trigger_rule="all_done")
    def total(ctx):
        return len(ctx.upstream("load"))

    load.expand(path=list_files) >> total
"""


@pytest.fixture
def mapped_run(store, settings, clock, write_dag):
    write_dag("mapped_ui.py", SOURCE)
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        run = store.trigger_run("mapped_ui", clock.now())
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    return run


def test_run_page_shows_a_mapped_task_as_one_node_and_row_with_counts(client, mapped_run):
    html = client.get(f"/runs/{mapped_run.run_id}").get_data(as_text=True)
    node = re.search(r'<g class="node mapped state-([a-z_]+)" data-task-id="load" '
                     r'data-state="[a-z_]+" data-map-counts="([^"]+)"', html)  # fmt: skip
    assert node, "no mapped node for load"
    assert node.group(1) == "failed"  # one instance failed, none is left running
    assert node.group(2) == "1 failed, 149 success"
    assert ">[150]</text>" in html
    assert f'href="/runs/{mapped_run.run_id}/tasks/load/instances"' in html
    assert html.count('<tr data-task-id="load"') == 1  # one row, not 150
    assert "[150 instances: 1 failed, 149 success]" in html


def test_grid_cell_opens_a_paged_instance_list(client, mapped_run):
    html = client.get("/dags/mapped_ui").get_data(as_text=True)
    cell = f'class="cell mapped state-failed" data-state="failed" href="/runs/{mapped_run.run_id}/tasks/load/instances"'
    assert cell in html
    # issue 27: the cell sums its instances up by state
    assert 'title="load · failed · 150 instances: 1 failed, 149 success"' in html
    page1 = client.get(f"/runs/{mapped_run.run_id}/tasks/load/instances").get_data(as_text=True)
    assert page1.count('<tr data-map-index="') == 100
    assert "page 1 of 2 (150 instance(s))" in page1
    page2 = client.get(f"/runs/{mapped_run.run_id}/tasks/load/instances?page=2")
    assert page2.get_data(as_text=True).count('<tr data-map-index="') == 50
    failed = client.get(f"/runs/{mapped_run.run_id}/tasks/load/instances?state=failed")
    text = failed.get_data(as_text=True)
    assert text.count('<tr data-map-index="') == 1 and '<tr data-map-index="7">' in text
    bad = client.get(f"/runs/{mapped_run.run_id}/tasks/load/instances?state=bogus")
    assert bad.status_code == 400 and "not a task state" in bad.get_data(as_text=True)
    api = client.get(f"/api/v1/runs/{mapped_run.run_id}/tasks/load/instances?page=2").get_json()
    assert api["counts"] == {"failed": 1, "success": 149} and api["total_entries"] == 150
    assert [i["map_index"] for i in api["task_instances"]] == list(range(100, 150))


def test_each_instance_has_its_task_page_log_and_json(client, mapped_run):
    run_id = mapped_run.run_id
    html = client.get(f"/runs/{run_id}/tasks/load/map/7").get_data(as_text=True)
    assert '<span class="map-index">[7]</span>' in html
    assert "part 7 is broken" in html and "loading part-7.csv" in html
    assert f"/api/v1/runs/{run_id}/tasks/load/map/7/tries/1/log" in html
    assert '{"path": "part-7.csv"}' in html.replace("&#34;", '"')
    log = client.get(f"/api/v1/runs/{run_id}/tasks/load/map/3/tries/1/log").get_json()
    assert "loading part-3.csv" in log["text"]
    ti = client.get(f"/api/v1/runs/{run_id}/tasks/load/map/3").get_json()
    assert ti["map_index"] == 3 and ti["state"] == "success" and ti["result"] == "10"
    missing = client.get(f"/runs/{run_id}/tasks/load/map/150")
    assert missing.status_code == 404 and "no map index 150" in missing.get_data(as_text=True)
    total = client.get(f"/api/v1/runs/{run_id}/tasks/total").get_json()
    assert total["map_index"] == -1 and total["result"] == "149"


def test_clearing_one_instance_from_its_page(client, csrf, mapped_run, store):
    run_id = mapped_run.run_id
    resp = client.post(
        f"/runs/{run_id}/tasks/load/clear", data={"csrf_token": csrf, "map_index": "7"}
    )
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/tasks/load/map/7")
    states = {t.map_index: t.state for t in store.task_instances(run_id) if t.task_id == "load"}
    assert states[7] == "scheduled" and states[6] == "success" and len(states) == 150
    bad = client.post(
        f"/runs/{run_id}/tasks/load/clear", data={"csrf_token": csrf, "map_index": "x"}
    )
    assert bad.status_code == 400


def test_marking_one_instance_from_its_page(client, csrf, mapped_run, store):
    run_id = mapped_run.run_id
    resp = client.post(
        f"/runs/{run_id}/tasks/load/mark",
        data={"csrf_token": csrf, "map_index": "7", "state": "success"},
    )
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/tasks/load/map/7")
    states = {t.map_index: t.state for t in store.task_instances(run_id) if t.task_id == "load"}
    assert states[7] == "success" and set(states.values()) == {"success"}
    [event] = [e for e in store.events(run_id=run_id) if e.kind == "task_marked_success"]
    assert event.map_index == 7
