"""Actions: every one is a CSRF-checked POST that says what it did; no GET changes anything."""

from __future__ import annotations

import pytest
from conftest import START, build_shell_dag  # noqa: I001  (tests/webui/conftest.py)
from sqlalchemy import select

from orchestrator.store.core import models as m
from webui import create_app

FORM_ACTIONS = [
    ("/dags/pipeline/trigger", {}),
    ("/dags/pipeline/pause", {"paused": "true"}),
    ("/dags/pipeline/backfill", {"start": "2026-01-01", "end": "2026-01-02"}),
    ("/runs/{run_id}/cancel", {}),
    ("/runs/{run_id}/tasks/extract/clear", {"downstream": "true"}),
    ("/runs/{run_id}/tasks/load/mark", {"state": "success"}),
    ("/api/v1/dags/pipeline/runs", {}),
    ("/api/v1/dags/pipeline/pause", {}),
    ("/api/v1/dags/pipeline/backfill", {}),
    ("/api/v1/runs/{run_id}/cancel", {}),
    ("/api/v1/runs/{run_id}/tasks/extract/clear", {}),
    ("/api/v1/runs/{run_id}/tasks/load/mark", {}),
    ("/logout", {}),
]


# derived data a GET may store: a DAG version's graph layout, a pure function of the
# version, kept on its first view (webui/layouts.py); checked apart, below
DERIVED = {"dag_versions": {"layout"}}


def snapshot(store) -> dict:
    """Every row of every table: what a request must leave alone."""
    out = {}
    with store.read() as conn:
        for table in m.metadata.sorted_tables:
            cols = [c for c in table.c if c.name not in DERIVED.get(table.name, ())]
            out[table.name] = sorted(map(repr, conn.execute(select(*cols)).all()))
    return out


def stored_layouts_are_the_versions_own(store) -> None:
    """The only thing a GET may have written: each version's layout, as computed."""
    from orchestrator.authoring.spec import DagSpec
    from webui.graph_layout import layout, to_json

    v = m.dag_versions
    with store.read() as conn:
        rows = conn.execute(select(v.c.data, v.c.layout)).all()
    for data, stored in rows:
        assert stored is None or stored == to_json(layout(DagSpec.from_json(data).graph))


def flashed(client) -> str:
    return client.get("/").get_data(as_text=True)


def test_trigger_form_builds_the_conf_from_declared_params(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline"), START)
    page = client.get("/dags/pipeline").get_data(as_text=True)
    assert 'name="param.target" value="/tmp/out dir"' in page
    assert 'type="number" name="param.n" value="3"' in page
    assert 'type="checkbox" name="param.dry_run"' in page

    form = {"csrf_token": csrf, "param.target": "/data", "param.n": "7", "param.dry_run": "true"}
    response = client.post("/dags/pipeline/trigger", data=form)

    [run] = store.list_runs(dag_id="pipeline")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/runs/{run.run_id}"
    assert run.conf == {"target": "/data", "n": 7, "dry_run": True}
    assert f"Triggered {run.run_id}" in client.get(response.headers["Location"]).get_data(True)


def test_trigger_with_a_bad_param_says_which(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline"), START)
    client.post("/dags/pipeline/trigger", data={"csrf_token": csrf, "param.n": "many"})
    assert store.list_runs(dag_id="pipeline") == []
    assert "param &#39;n&#39;: expected int, got &#39;many&#39;" in flashed(client)


def test_pause_and_unpause(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline"), START)
    client.post("/dags/pipeline/pause", data={"csrf_token": csrf, "paused": "true"})
    assert store.get_dag("pipeline").is_paused
    assert "pipeline paused." in flashed(client)
    client.post("/dags/pipeline/pause", data={"csrf_token": csrf, "paused": "false"})
    assert not store.get_dag("pipeline").is_paused
    assert [e.kind for e in store.events(dag_id="pipeline", limit=2)] == [
        "dag_unpaused",
        "dag_paused",
    ]


def test_clear_with_downstream(client, store, csrf, worked_run):
    run = worked_run()
    response = client.post(
        f"/runs/{run.run_id}/tasks/extract/clear", data={"csrf_token": csrf, "downstream": "true"}
    )
    assert response.status_code == 302
    assert store.task_instance(run.run_id, "extract").state == "scheduled"
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "Cleared extract" in page


def test_mark_success_and_failed_are_compare_and_set_and_logged(client, store, csrf, worked_run):
    run = worked_run()
    url = f"/runs/{run.run_id}/tasks/load/mark"
    client.post(url, data={"csrf_token": csrf, "state": "success"})
    assert store.task_instance(run.run_id, "load").state == "success"
    assert "Marked load in" in flashed(client)
    client.post(url, data={"csrf_token": csrf, "state": "success"})  # already success
    assert "is success already" in flashed(client)
    client.post(url, data={"csrf_token": csrf, "state": "failed"})
    assert store.task_instance(run.run_id, "load").state == "failed"
    kinds = [e.kind for e in store.events(run_id=run.run_id, limit=3)]
    assert kinds[:2] == ["task_marked_failed", "task_marked_success"]
    client.post(url, data={"csrf_token": csrf, "state": "running"})
    assert "can be marked success or failed" in flashed(client)


def test_mark_closes_a_running_try(client, store, csrf, worked_run):
    run = worked_run()
    client.post(
        f"/runs/{run.run_id}/tasks/archive/mark", data={"csrf_token": csrf, "state": "failed"}
    )
    [try_] = store.tries(run.run_id, "archive")
    assert try_.state == "marked_failed" and try_.end_date is not None
    assert store.task_instance(run.run_id, "archive").owner is None


def test_cancel_a_run(client, store, csrf, worked_run):
    run = worked_run()
    client.post(f"/runs/{run.run_id}/cancel", data={"csrf_token": csrf})
    assert store.get_run(run.run_id).state == "cancelled"
    assert f"Cancelled {run.run_id}." in flashed(client)
    client.post(f"/runs/{run.run_id}/cancel", data={"csrf_token": csrf})
    assert "is already finished" in flashed(client)


def test_backfill_a_date_range(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline", timezone="Europe/Berlin"), START)
    client.post(
        "/dags/pipeline/backfill",
        data={"csrf_token": csrf, "start": "2026-01-02", "end": "2026-01-04"},
    )
    runs = store.list_runs(dag_id="pipeline")
    assert sorted(r.logical_date.isoformat() for r in runs) == [
        "2026-01-02T01:00:00+00:00",
        "2026-01-03T01:00:00+00:00",
        "2026-01-04T01:00:00+00:00",
    ]
    assert {r.run_type for r in runs} == {"backfill"}
    assert "3 run(s) created" in flashed(client)
    client.post("/dags/pipeline/backfill", data={"csrf_token": csrf, "start": "x", "end": "y"})
    assert "dates must look like 2026-01-31" in flashed(client)


def test_api_actions(client, store, csrf, worked_run, clock):
    run = worked_run()
    clock.advance(minutes=1)  # a manual run at another instant than worked_run's
    h = {"X-CSRF-Token": csrf}
    r = client.post("/api/v1/dags/pipeline/runs", json={"conf": {"n": 9}}, headers=h)
    assert r.status_code == 201 and r.get_json()["message"].startswith("Triggered")
    assert store.get_run(r.get_json()["run_id"]).conf == {"n": 9}
    r = client.post("/api/v1/dags/pipeline/runs", json={"conf": {"n": "x"}}, headers=h)
    assert r.status_code == 400 and "param 'n' must be an integer" in r.get_json()["detail"]
    r = client.post("/api/v1/dags/pipeline/pause", json={"paused": True}, headers=h)
    assert r.get_json() == {"message": "pipeline paused."}
    r = client.post(f"/api/v1/runs/{run.run_id}/tasks/load/mark", json={"state": "x"}, headers=h)
    assert r.status_code == 409 and "success or failed" in r.get_json()["detail"]
    r = client.post(
        f"/api/v1/runs/{run.run_id}/tasks/extract/clear", json={"downstream": True}, headers=h
    )
    assert r.status_code == 200 and "Cleared extract" in r.get_json()["message"]
    r = client.post(f"/api/v1/runs/{run.run_id}/cancel", headers=h)
    assert r.get_json() == {"message": f"Cancelled {run.run_id}."}
    r = client.post("/api/v1/runs/nope/cancel", headers=h)
    assert r.status_code == 404 and r.mimetype == "application/json"


@pytest.mark.parametrize("token", [None, "wrong"])
def test_every_action_refuses_a_missing_or_wrong_csrf_token(client, store, worked_run, token):
    run = worked_run()
    client.get("/")  # the session exists and has a token: it just is not sent
    before = snapshot(store)
    for path, form in FORM_ACTIONS:
        url = path.format(run_id=run.run_id)
        data = dict(form, csrf_token=token) if token else form
        headers = {"X-CSRF-Token": token} if token else {}
        response = client.post(url, data=data, headers=headers)
        assert response.status_code == 400, url
        assert "CSRF" in response.get_data(as_text=True), url
    assert snapshot(store) == before


def test_every_get_route_leaves_the_database_unchanged(
    app, client, store, worked_run, live_cluster
):
    run = worked_run()
    store.record_import_error("/dags/bad.py", "SyntaxError", "TB", START)
    values = {"dag_id": "pipeline", "run_id": run.run_id, "task_id": "extract", "try_number": 1,
              "map_index": 0}  # fmt: skip
    values |= {"ref": "current", "a": "1", "b": "current"}  # DAG versions (issue 17)
    values["asset_id"] = _an_asset_with_an_event(store)  # issue 15: the asset pages
    values["group"] = "grp"  # issue 25 item 7: a mapped task group (404 here: none)
    before = snapshot(store)
    seen = 0
    for rule in app.url_map.iter_rules():
        if "GET" not in rule.methods or rule.endpoint == "static":
            continue
        url = rule.build(values, append_unknown=False)[1]
        response = client.get(url)
        # extract is not mapped: it has no instance 0 (tests/webui/test_mapped_pages.py)
        mapped = {"map_index", "group"} & set(rule.arguments)
        ok = (200, 302, 404) if mapped else (200, 302)
        assert response.status_code in ok, url
        seen += 1
    assert seen >= 18
    assert snapshot(store) == before
    stored_layouts_are_the_versions_own(store)


def test_login_is_required_beyond_loopback(settings, store, clock, live_cluster):
    store.add_user("ada", "long enough password", START)
    app = create_app(settings.with_(web_host="0.0.0.0"), store, clock=clock)
    client = app.test_client()
    assert client.get("/health").status_code == 200
    r = client.get("/dags/x")
    assert r.status_code == 302 and r.headers["Location"].startswith("/login?next=/dags/x")
    assert client.get("/api/v1/dags").status_code == 401
    page = client.get("/login").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    bad = client.post("/login", data={"csrf_token": token, "username": "ada", "password": "x"})
    assert bad.status_code == 401 and "Wrong user name or password" in bad.get_data(True)
    ok = client.post(
        "/login",
        data={
            "csrf_token": token,
            "username": "ada",
            "password": "long enough password",
            "next": "//evil.example/",
        },
    )
    assert ok.status_code == 302 and ok.headers["Location"] == "/"
    assert client.get("/api/v1/dags").status_code == 200
    assert ">ada<" in client.get("/").get_data(as_text=True)


def test_users_are_stored_hashed(store):
    store.add_user("ada", "long enough password", START)
    with store.read() as conn:
        stored = conn.execute(select(m.users.c.password_hash)).scalar_one()
    assert "long enough password" not in stored and stored.startswith(("scrypt:", "pbkdf2:"))
    assert store.check_password("ada", "long enough password")
    assert not store.check_password("ada", "wrong password!")
    assert not store.check_password("bob", "long enough password")


def _an_asset_with_an_event(store) -> int:
    from orchestrator import DAG, Asset, task
    from orchestrator.authoring.spec import serialize_dag

    sales = Asset("warehouse://sales/daily")
    with DAG("asset_report", schedule=[sales]) as dag:

        @task
        def report(ctx):
            pass

    store.save_dag(serialize_dag(dag), START)
    store.emit_asset_event(sales.uri, {"rows": 1}, START, emitter="test")
    return store.get_asset(sales.uri).id
