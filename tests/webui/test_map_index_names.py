"""``map_index_template`` (issue 25 item 7): each instance of a mapped task gets a name
from its arguments, stored with the instance and shown, escaped, in the instance list,
the task page, the JSON API and ``runs show``; a mapped task group's task names its
instances from the group's item."""

from __future__ import annotations

import json

import pytest

from orchestrator.cli import main
from tests.helpers import Harness

SOURCE = """
from orchestrator import DAG, task, task_group

with DAG("named", schedule=None) as dag:
    @task
    def files():
        return ["part-1.csv", "<script>alert(1)</script>", 3]

    @task(map_index_template="{{ path.upper() }} in {{ bucket }}")
    def load(path, bucket):
        return str(path)

    @task(map_index_template="day {{ day }}")
    def report(day):
        return day

    @task_group
    def per_day(day):
        report(day)

    load.partial(bucket="raw").expand(path=files())
    per_day.expand(day=["mon", "tue"])
"""


@pytest.fixture
def named_run(store, settings, clock, write_dag):
    write_dag("named.py", SOURCE)
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().dags == 1
        assert store.import_errors() == []
        run = store.trigger_run("named", clock.now())
        run = harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    assert run.state == "success"
    return run


def _names(store, run_id: str, task_id: str) -> dict[int, str | None]:
    return {
        t.map_index: t.rendered_map_index
        for t in store.task_instances(run_id)
        if t.task_id == task_id
    }


def test_instances_are_named_from_their_arguments_and_a_group_item(store, named_run):
    assert _names(store, named_run.run_id, "load") == {
        0: "PART-1.CSV in raw",
        1: "<SCRIPT>ALERT(1)</SCRIPT> in raw",
        2: None,  # 3 has no upper(): this instance is shown by its index
    }
    assert _names(store, named_run.run_id, "per_day.report") == {0: "day mon", 1: "day tue"}


def test_the_instance_list_and_task_page_show_the_name_escaped(client, named_run):
    run_id = named_run.run_id
    html = client.get(f"/runs/{run_id}/tasks/load/instances").get_data(as_text=True)
    assert '<td class="map-name">PART-1.CSV in raw</td>' in html
    assert "&lt;SCRIPT&gt;ALERT(1)&lt;/SCRIPT&gt; in raw" in html
    assert "<SCRIPT>" not in html
    page = client.get(f"/runs/{run_id}/tasks/per_day.report/map/1").get_data(as_text=True)
    assert '<span class="map-name">day tue</span>' in page
    api = client.get(f"/api/v1/runs/{run_id}/tasks/load/instances").get_json()
    assert [i["rendered_map_index"] for i in api["task_instances"]] == [
        "PART-1.CSV in raw",
        "<SCRIPT>ALERT(1)</SCRIPT> in raw",
        None,
    ]


def test_runs_show_prints_each_instance_with_its_name(named_run, settings, capsys, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    assert main(["runs", "show", named_run.run_id]) == 0
    out = capsys.readouterr().out
    assert "load[0] PART-1.CSV in raw" in out
    assert "per_day.report[1] day tue" in out
    assert main(["runs", "show", named_run.run_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    names = {
        (t["task_id"], t["map_index"]): t["rendered_map_index"] for t in shown["task_instances"]
    }
    assert names[("load", 0)] == "PART-1.CSV in raw"
