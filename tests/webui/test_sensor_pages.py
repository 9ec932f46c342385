"""Sensors in the UI (issue 15): a sensor between pokes shows its next poke on the task
page and in its reasons, and graphs draw sensor nodes distinctly."""

from __future__ import annotations

from datetime import timedelta

from conftest import START  # noqa: I001  (tests/webui/conftest.py)

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag

LEASE = timedelta(seconds=30)


def _sensor_dag() -> dict:
    with DAG("waiting", schedule=None) as dag:

        @task.sensor(poke_interval=timedelta(seconds=30), timeout=timedelta(hours=1))
        def landed(ctx):
            return False

        @task
        def report(ctx):
            return 1

        landed >> report
    return serialize_dag(dag)


def _rescheduled(store):
    store.save_dag(_sensor_dag(), START)
    run = store.trigger_run("waiting", START)
    store.start_queued_runs(START)
    store.release_ready(START)
    [claim] = store.claim("worker-1", START, LEASE, limit=5)
    assert store.record_poke(claim, START + timedelta(seconds=1)) == "up_for_reschedule"
    return run


def test_the_task_page_shows_the_next_poke_and_why(client, store):
    run = _rescheduled(store)
    html = client.get(f"/runs/{run.run_id}/tasks/landed").get_data(as_text=True)
    assert 'class="pill state-up_for_reschedule"' in html
    assert "reschedule mode, poke every 30 s" in html
    assert '<span class="next-poke">next poke at <time datetime="2026-01-01T00:00:31' in html
    assert 'data-code="sensor_waiting"' in html
    # the why panel's times in the page's one format, UTC on hover (issue 27)
    assert 'it times out at <time datetime="2026-01-01T01:00:00+00:00"' in html
    assert ">2026-01-01 01:00:00 UTC</time>" in html
    api = client.get(f"/api/v1/runs/{run.run_id}/tasks/landed").get_json()
    assert api["state"] == "up_for_reschedule" and api["poke_count"] == 1
    assert api["ready_at"].startswith("2026-01-01T00:00:31")
    assert [r["code"] for r in api["why_not_running"]][0] == "sensor_waiting"


def test_graphs_draw_sensors_distinctly(client, store):
    run = _rescheduled(store)
    for url in (f"/runs/{run.run_id}", "/dags/waiting"):
        html = client.get(url).get_data(as_text=True)
        assert '<g class="node state-up_for_reschedule sensor" data-task-id="landed"' in html
        assert '<g class="node state-scheduled" data-task-id="report"' in html
        assert "<title>landed (sensor): up_for_reschedule</title>" in html
