"""Who triggered a run (issue 13, item 7): the UI and the API record the user on the
run and in the run_created event; the run page and the run's JSON show it."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.webui.conftest import START, build_shell_dag
from webui import create_app


def _run_created(store, run_id: str) -> str:
    [event] = store.events(run_id=run_id, kind="run_created")
    return event.message


def _logged_in(settings, store) -> FlaskClient:
    """A client of a UI bound beyond loopback, logged in as ada (the real login)."""
    store.add_user("ada", "long enough password", START)
    client = create_app(settings.with_(web_host="0.0.0.0"), store).test_client()
    page = client.get("/login").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    form = {"csrf_token": token, "username": "ada", "password": "long enough password"}
    assert client.post("/login", data=form).status_code == 302
    return client


def test_a_ui_trigger_without_login_names_the_address(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline"), START)
    client.post("/dags/pipeline/trigger", data={"csrf_token": csrf})
    [run] = store.list_runs(dag_id="pipeline")
    assert run.triggered_by == "web:anonymous@127.0.0.1"
    assert _run_created(store, run.run_id).endswith("created by web:anonymous@127.0.0.1")
    page = client.get(f"/runs/{run.run_id}").get_data(as_text=True)
    assert '<dt>Triggered by</dt><dd class="triggered-by">web:anonymous@127.0.0.1</dd>' in page
    assert client.get(f"/api/v1/runs/{run.run_id}").get_json()["triggered_by"] == run.triggered_by


def test_ui_and_api_triggers_and_backfills_name_the_logged_in_user(settings, store):
    store.save_dag(build_shell_dag("pipeline"), START)
    client = _logged_in(settings, store)
    token = client.get("/api/v1/csrf").get_json()["csrf_token"]
    client.post("/dags/pipeline/trigger", data={"csrf_token": token})
    [ui_run] = store.list_runs(dag_id="pipeline")
    assert ui_run.triggered_by == "web:ada"

    headers = {"X-CSRF-Token": token}
    response = client.post("/api/v1/dags/pipeline/runs", json={"conf": {}}, headers=headers)
    assert response.status_code == 201, response.get_json()
    api_run = store.get_run(response.get_json()["run_id"])
    assert api_run.triggered_by == "api:ada"
    assert _run_created(store, api_run.run_id).endswith("created by api:ada")

    client.post(
        "/dags/pipeline/backfill",
        data={"csrf_token": token, "start": "2026-01-01", "end": "2026-01-02"},
    )
    backfilled = [r for r in store.list_runs(dag_id="pipeline") if r.run_type == "backfill"]
    assert len(backfilled) == 2 and {r.triggered_by for r in backfilled} == {"web:ada"}


def test_a_scheduled_run_says_the_scheduler(client, store, make_runs, make_dag):
    make_dag("etl")
    [run] = make_runs("etl", ["queued"])
    assert run.triggered_by is None  # a store-level trigger with nobody named
    page = client.get(f"/runs/{run.run_id}").get_data(as_text=True)
    assert '<dd class="triggered-by">—</dd>' in page
