"""A DAG's versions in the web UI and the API (issue 17 item 2): the DAG page lists
them, a version's page shows the file parsed then, a diff page shows what changed
(escaped), and a run's page names and shows the version it ran, not the current one."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from conftest import START  # noqa: I001  (tests/webui/conftest.py)

from orchestrator import DAG

OLD = "# first\nwith DAG('etl') as dag:\n    dag.shell('t', 'echo one')\n"
NEW = (
    "# second <script>alert(1)</script>\nwith DAG('etl') as dag:\n    dag.shell('t', 'echo two')\n"
)


def _source(text: str) -> dict:
    raw = text.encode()
    return {"text": text, "sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw),
            "truncated": False}  # fmt: skip


def _save(store, command: str, text: str, at) -> None:
    from orchestrator.authoring.spec import serialize_dag

    with DAG("etl", schedule=None) as dag:
        dag.shell("t", command)
    store.save_dag(serialize_dag(dag) | {"source": _source(text)}, at)


def _two_versions(store):
    _save(store, "echo one", OLD, START)
    old_run = store.trigger_run("etl", START)
    _save(store, "echo two", NEW, START + timedelta(hours=1))
    return old_run


def test_the_dag_page_lists_versions_with_a_diff_link(client, store):
    _two_versions(store)
    body = client.get("/dags/etl").get_data(as_text=True)
    assert 'id="versions"' in body and body.count('class="version-row"') == 2
    assert 'href="/dags/etl/versions/1/diff/2"' in body and "first version" in body
    assert "task &#39;t&#39; changed: command" in body  # what changed, on the list


def test_the_diff_page_shows_what_changed_escaped(client, store):
    _two_versions(store)
    response = client.get("/dags/etl/versions/1/diff/2")
    assert response.status_code == 200
    body = response.get_data(as_text=True)
    assert "<script>alert(1)</script>" not in body
    assert '<span class="diff-add">+# second &lt;script&gt;alert(1)&lt;/script&gt;</span>' in body
    assert '<span class="diff-del">-# first</span>' in body
    assert "task &#39;t&#39; changed: command" in body


def test_a_run_shows_the_version_it_ran_and_that_versions_file(client, store):
    old_run = _two_versions(store)
    body = client.get(f"/runs/{old_run.run_id}").get_data(as_text=True)
    assert 'href="/dags/etl/versions/1">version 1</a>' in body
    assert "# first" in body and "# second" not in body  # the file it ran, not today's
    page = client.get("/dags/etl/versions/1").get_data(as_text=True)
    assert "echo one" in page and "version 1" in page
    api = client.get(f"/api/v1/runs/{old_run.run_id}").get_json()
    assert api["dag_version"] == 1


def test_the_api_lists_shows_and_diffs_versions(client, store):
    _two_versions(store)
    listed = client.get("/api/v1/dags/etl/versions").get_json()
    assert [(v["number"], v["is_current"], v["runs"]) for v in listed["versions"]] == [
        (1, False, 1), (2, True, 0),
    ]  # fmt: skip
    one = client.get("/api/v1/dags/etl/versions/current").get_json()
    assert one["number"] == 2 and one["source"] == NEW
    assert one["changes_from_previous"] == ["task 't' changed: command"]
    whole = listed["versions"][0]["hash"]
    # a hash prefix of digits only would name a version number: take one with a letter
    first = whole[: next(n for n in range(8, len(whole) + 1) if not whole[:n].isdigit())]
    diff = client.get(f"/api/v1/dags/etl/versions/{first}/diff/2").get_json()
    assert diff["changes"] == ["task 't' changed: command"]
    assert "+    dag.shell('t', 'echo two')" in diff["diff"].splitlines()
    paths = client.get("/api/v1/openapi.json").get_json()["paths"]
    assert "/dags/{dag_id}/versions/{a}/diff/{b}" in paths


def test_bad_versions_are_clear_errors_and_change_nothing(client, store):
    _two_versions(store)
    missing = client.get("/api/v1/dags/etl/versions/7")
    assert missing.status_code == 404
    assert "has no version 7 (versions: 1..2)" in missing.get_json()["detail"]
    bad = client.get("/api/v1/dags/etl/versions/%3Cscript%3E/diff/1")
    assert bad.status_code == 400 and "expected a version number" in bad.get_json()["detail"]
    page = client.get("/dags/etl/versions/%3Cscript%3E")
    assert page.status_code == 400 and "<script>" not in page.get_data(as_text=True)
    assert client.get("/api/v1/dags/nope/versions").status_code == 404
    assert len(store.dag_versions("etl")) == 2
