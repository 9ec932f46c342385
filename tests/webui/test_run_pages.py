"""The run, task-instance and event-log pages and their JSON mirrors."""

from __future__ import annotations

import re

from conftest import START, build_shell_dag  # noqa: I001  (tests/webui/conftest.py)


def node_state(html: str, task_id: str) -> str:
    match = re.search(rf'<g class="node state-([a-z_]+)" data-task-id="{task_id}"', html)
    assert match, f"no graph node for {task_id}"
    return match.group(1)


def test_dag_page_has_grid_graph_history_source_and_preview(client, store, worked_run):
    run = worked_run()
    html = client.get("/dags/pipeline").get_data(as_text=True)
    assert f'href="/runs/{run.run_id}/tasks/load"' in html  # a grid cell
    assert 'class="cell state-failed"' not in html  # load is up for retry, not failed
    assert 'class="cell state-up_for_retry"' in html and 'class="cell state-success"' in html
    assert node_state(html, "extract") == "success" and node_state(html, "archive") == "running"
    assert "At 02:00, UTC" in html
    assert html.count("<li><time") == 8  # schedule preview
    assert "def extract(ctx):" in html  # the DAG file's source (this conftest)
    assert "page 1 of 1" in html


def test_history_pages_and_filters(client, store, make_dag, make_runs):
    make_dag("etl")
    make_runs("etl", ["success"] * 30 + ["failed"] * 2)
    page1 = client.get("/dags/etl").get_data(as_text=True)
    assert "page 1 of 2" in page1 and "32 runs" in page1
    page2 = client.get("/dags/etl?page=2").get_data(as_text=True)
    assert "page 2 of 2" in page2
    failed = client.get("/dags/etl?state=failed").get_data(as_text=True).split('id="history"')[1]
    assert failed.count('class="pill state-failed"') == 2
    assert 'class="pill state-success"' not in failed
    api = client.get("/api/v1/dags/etl/runs?state=failed&limit=1&offset=1").get_json()
    assert api["total_entries"] == 2 and len(api["dag_runs"]) == 1


def test_run_page_graph_gantt_and_facts(client, worked_run):
    run = worked_run()
    html = client.get(f"/runs/{run.run_id}").get_data(as_text=True)
    assert node_state(html, "extract") == "success"
    assert node_state(html, "load") == "up_for_retry"
    assert 'class="bar bar-running state-success"' in html  # extract's try
    assert 'class="bar bar-queued' in html  # load waited for a worker after extract ended
    assert "manual" in html and '<code class="conf">{"n": 5}</code>' in html
    assert "Cancel run" in html
    body = client.get(f"/api/v1/runs/{run.run_id}").get_json()
    assert {t["task_id"]: t["state"] for t in body["task_instances"]} == {
        "extract": "success",
        "load": "up_for_retry",
        "archive": "running",
    }


def test_task_page_tries_log_result_and_why(client, worked_run):
    run = worked_run()
    extract = client.get(f"/runs/{run.run_id}/tasks/extract").get_data(as_text=True)
    assert "hello" in extract and 'data-running="0"' in extract
    assert "{&#34;rows&#34;: 1}" in extract  # its result
    load = client.get(f"/runs/{run.run_id}/tasks/load").get_data(as_text=True)
    assert "ValueError: boom" in load
    assert 'data-code="retry_backoff"' in load and "waiting for retry backoff until" in load
    assert "{&#34;rows&#34;: 1}" in load  # the upstream result it receives
    archive = client.get(f"/runs/{run.run_id}/tasks/archive").get_data(as_text=True)
    assert "tar czf &#39;/tmp/out dir&#39;/2026-01-01.tgz /etc/hostname" in archive
    assert 'data-code="leased"' in archive and "leased by worker worker-1 until" in archive
    api = client.get(f"/api/v1/runs/{run.run_id}/tasks/archive").get_json()
    assert api["rendered_command"].startswith("tar czf '/tmp/out dir'/")
    assert api["why_not_running"][0]["code"] == "leased"


def test_why_a_task_waits_for_a_paused_dag_and_upstream(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline"), START)
    run = store.trigger_run("pipeline", START)
    store.start_queued_runs(START)
    store.set_paused("pipeline", True, START)
    html = client.get(f"/runs/{run.run_id}/tasks/load").get_data(as_text=True)
    assert 'data-code="dag_paused"' in html
    # starting the run queued its root task: load waits for it
    assert 'data-code="upstream_waiting"' in html and "extract (queued)" in html


def test_log_api_follows_from_an_offset(client, store, settings, worked_run):
    run = worked_run(log="one\n")
    url = f"/api/v1/runs/{run.run_id}/tasks/extract/tries/1/log"
    first = client.get(url).get_json()
    assert first["text"] == "one\n" and first["next_offset"] == 4 and first["finished"]
    [t] = store.tries(run.run_id, "extract")
    with open(f"{settings.log_dir}/{t.log_path}", "a") as f:
        f.write("two\n")
    more = client.get(f"{url}?offset=4").get_json()
    assert more["text"] == "two\n" and more["offset"] == 4
    assert client.get(f"/api/v1/runs/{run.run_id}/tasks/extract/tries/9/log").status_code == 404


def test_event_log_filters(client, store, worked_run, make_dag):
    run = worked_run()
    make_dag("other")
    html = client.get(f"/events?run_id={run.run_id}").get_data(as_text=True).split("<tbody>")[1]
    assert "run_created" in html and "task_retry" in html and "dag_added" not in html
    html = client.get("/events?kind=dag_added").get_data(as_text=True).split("<tbody>")[1]
    assert ">other<" in html and "task_retry</a>" not in html
    html = client.get("/events?dag_id=other").get_data(as_text=True)
    assert "pipeline" not in html.split("<tbody>")[1]
    api = client.get("/api/v1/events?kind=task_retry").get_json()
    assert [e["kind"] for e in api["events"]] == ["task_retry"]


def test_dag_list_filters_by_tag_and_search(client, make_dag):
    make_dag("sales_daily", tags=["finance"])
    make_dag("ops_cleanup", tags=["ops"])
    html = client.get("/?tag=finance").get_data(as_text=True)
    assert 'id="dag-sales_daily"' in html and 'id="dag-ops_cleanup"' not in html
    html = client.get("/?q=CLEAN").get_data(as_text=True)
    assert 'id="dag-ops_cleanup"' in html and 'id="dag-sales_daily"' not in html
    assert client.get("/?q=zzz").get_data(as_text=True).count("No DAG matches") == 1


def test_openapi_document_lists_every_api_route(app, client):
    doc = client.get("/api/v1/openapi.json").get_json()
    assert doc["openapi"].startswith("3.")
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1/") or rule.rule.endswith("openapi.json"):
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule[len("/api/v1") :])
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (method, path) in documented, (method, path)


def test_an_http_tasks_page_shows_its_rendered_request_without_secrets(client, store):
    from orchestrator import DAG
    from orchestrator.authoring.spec import serialize_dag

    with DAG("hooks", schedule=None, params={"who": "<b>&x=1"}) as dag:
        dag.http(
            "notify",
            "http://127.0.0.1:9/hook?who={{ params.who }}&api_key=k3y",
            method="POST",
            headers={"Authorization": "Bearer t0ken"},
            json={"who": "{{ params.who }}"},
        )
    store.save_dag(serialize_dag(dag), START)
    run = store.trigger_run("hooks", START)
    html = client.get(f"/runs/{run.run_id}/tasks/notify").get_data(as_text=True)
    assert "Rendered request" in html
    assert "POST http://127.0.0.1:9/hook?who=%3Cb%3E%26x%3D1&amp;api_key=***" in html
    assert "Authorization: ***" in html and "&#34;who&#34;: &#34;&lt;b&gt;&amp;x=1&#34;" in html
    assert "t0ken" not in html and "k3y" not in html and "<b>" not in html
