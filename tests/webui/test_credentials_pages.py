"""The variables and connections pages (issue 16): writes are CSRF-checked POSTs,
secret values never reach a page, bad input is refused with the reason and stores
nothing, and a rendered command shows secrets as ***."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag
from orchestrator.store.credentials.secret_box import box_of

START = datetime(2026, 1, 1, tzinfo=UTC)
PASSWORD = "s3cret-pw-value"


def _pages(client) -> str:
    return "".join(
        client.get(path).get_data(as_text=True)
        for path in ("/variables", "/connections", "/variables?edit=api_token",
                     "/connections?edit=warehouse")
    )  # fmt: skip


def test_variables_are_set_listed_and_secrets_never_shown(client, csrf, store, settings):
    r = client.post("/variables", data={"csrf_token": csrf, "key": "region", "value": "emea"})
    assert r.status_code == 302
    form = {"csrf_token": csrf, "key": "api_token", "value": "tok-abcdef", "description": "d"}
    client.post("/variables", data=form)
    form = {"csrf_token": csrf, "key": "hush", "value": "quiet-please", "is_secret": "on"}
    client.post("/variables", data=form)
    page = client.get("/variables").get_data(as_text=True)
    assert "emea" in page and "api_token" in page and "***" in page
    html = _pages(client) + client.get("/variables?edit=hush").get_data(as_text=True)
    assert "tok-abcdef" not in html and "quiet-please" not in html
    assert store.get_variable("api_token", box_of(settings)).value == "tok-abcdef"
    assert store.get_variable("hush", box_of(settings)).is_secret
    edit = client.get("/variables?edit=hush").get_data(as_text=True)
    assert 'name="keep_blank"' in edit
    form = {"csrf_token": csrf, "key": "hush", "value": "", "keep_blank": "on",
            "is_secret": "on", "description": "now described"}  # fmt: skip
    client.post("/variables", data=form)
    hush = store.get_variable("hush", box_of(settings))
    assert (hush.value, hush.description) == ("quiet-please", "now described")


def test_writes_without_the_csrf_token_change_nothing(client, store):
    r = client.post("/variables", data={"key": "region", "value": "emea"})
    assert r.status_code in (400, 403)
    r = client.post("/connections", data={"conn_id": "c", "uri": "http://h"})
    assert r.status_code in (400, 403)
    assert store.list_variables() == [] and store.list_connections() == []


def test_bad_input_is_flashed_and_stores_nothing(client, csrf, store):
    client.post("/variables", data={"csrf_token": csrf, "key": "j", "value": "{x", "is_json": "on"})
    page = client.get("/variables").get_data(as_text=True)
    assert "--json value is not JSON" in page or "is not JSON" in page
    client.post("/connections", data={"csrf_token": csrf, "conn_id": "c", "uri": "nope"})
    page = client.get("/connections").get_data(as_text=True)
    assert "must look like type://" in page
    form = {"csrf_token": csrf, "key": "k", "value": "v", "is_json": "maybe"}
    client.post("/variables", data=form)
    assert "form field &#39;is_json&#39;" in client.get("/variables").get_data(as_text=True)
    assert store.list_variables() == [] and store.list_connections() == []


def test_connections_add_edit_keeps_the_password_and_delete(client, csrf, store, settings):
    uri = f"postgresql://etl:{PASSWORD}@db.internal:5432/sales"
    client.post("/connections", data={"csrf_token": csrf, "conn_id": "warehouse", "uri": uri})
    r = client.post("/connections", data={"csrf_token": csrf, "conn_id": "warehouse", "uri": uri})
    assert "exists already" in client.get("/connections").get_data(as_text=True)
    assert r.status_code == 302
    edit = {"csrf_token": csrf, "conn_id": "warehouse", "replace": "on", "conn_type": "postgresql",
            "host": "db.internal", "login": "etl", "port": "5432", "schema": "sales2"}  # fmt: skip
    client.post("/connections", data=edit)  # same destination: a blank password keeps it
    conn = store.get_connection("warehouse", box_of(settings))
    assert (conn.schema, conn.port, conn.password) == ("sales2", 5432, PASSWORD)
    assert PASSWORD not in _pages(client)
    client.post("/connections/warehouse/delete", data={"csrf_token": csrf})
    assert store.list_connections() == []


def test_a_rendered_command_shows_secrets_as_stars(client, store, settings):
    from orchestrator.authoring.credentials import Connection

    box = box_of(settings)
    store.add_connection(
        Connection.from_uri("warehouse", f"postgresql://etl:{PASSWORD}@db.internal/sales"),
        START,
        box,
    )
    store.set_variable("region", "emea", START, box)
    with DAG("dump", schedule=None) as dag:
        dag.shell("dump", "pg_dump -h {{ conn.warehouse.host }} -U {{ conn.warehouse.login }} "
                  "--pw {{ conn.warehouse.password }} {{ var.value.region }}")  # fmt: skip
    store.save_dag(serialize_dag(dag), START)
    run = store.trigger_run("dump", START)
    page = client.get(f"/runs/{run.run_id}/tasks/dump").get_data(as_text=True)
    assert "pg_dump -h db.internal -U etl --pw '***' emea" in page.replace("&#39;", "'")
    assert PASSWORD not in page


def test_the_json_api_sets_lists_and_deletes_without_showing_secrets(client, csrf, store, settings):
    headers = {"X-CSRF-Token": csrf}
    r = client.post("/api/v1/variables", json={"key": "api_token", "value": "tok-zyxwvu"},
                    headers=headers)  # fmt: skip
    assert r.status_code == 201 and "secret variable api_token set" in r.get_json()["message"]
    uri = f"postgresql://etl:{PASSWORD}@db.internal:5432/sales"
    r = client.post("/api/v1/connections", json={"conn_id": "warehouse", "uri": uri},
                    headers=headers)  # fmt: skip
    assert r.status_code == 201
    body = {"conn_id": "api", "conn_type": "http", "host": "h", "port": 8443,
            "password": "api-pass-1", "extra": {"token": "t0ken-value"}}  # fmt: skip
    assert client.post("/api/v1/connections", json=body, headers=headers).status_code == 201
    listed = client.get("/api/v1/variables").get_data(as_text=True)
    listed += client.get("/api/v1/connections").get_data(as_text=True)
    for secret in ("tok-zyxwvu", PASSWORD, "api-pass-1", "t0ken-value"):
        assert secret not in listed
    assert store.get_connection("api", box_of(settings)).extra == {"token": "t0ken-value"}
    bad = [
        ({"conn_id": "c", "uri": "nope"}, "must look like type://"),
        ({"conn_id": "c", "conn_type": "http", "port": "80"}, "port: expected a whole number"),
        ({"conn_id": "warehouse", "uri": uri}, "exists already"),
        ({"conn_id": "c", "uri": uri, "host": "x"}, "not both"),
    ]
    for sent, reason in bad:
        r = client.post("/api/v1/connections", json=sent, headers=headers)
        assert r.status_code == 400 and reason in r.get_json()["detail"], (sent, r.get_json())
    r = client.post("/api/v1/variables", json={"key": "j", "value": "{", "is_json": True},
                    headers=headers)  # fmt: skip
    assert r.status_code == 400 and "not JSON" in r.get_json()["detail"]
    assert client.post("/api/v1/variables", json={"key": "x", "value": "y"}).status_code in (
        400,
        403,
    )  # fmt: skip - no CSRF token
    assert client.post("/api/v1/connections/api/delete", headers=headers).status_code == 200
    assert client.post("/api/v1/variables/api_token/delete", headers=headers).status_code == 200
    assert [c["conn_id"] for c in store.list_connections()] == ["warehouse"]
    assert store.list_variables() == []


def test_a_rendered_command_shows_pulled_results_or_why_not(client, store):
    with DAG("pulls", schedule=None) as dag:

        @task
        def extract(ctx):
            return None

        dag.shell("echo", "echo {{ ti.xcom_pull(task_ids='extract', key='rows') }}")
    store.save_dag(serialize_dag(dag), START)
    run = store.trigger_run("pulls", START)
    store.start_queued_runs(START)
    store.release_ready(START)
    claims = store.claim("worker-1", START + timedelta(seconds=2), timedelta(seconds=30), limit=5)
    first = next(c for c in claims if c.task_id == "extract")
    page = client.get(f"/runs/{run.run_id}/tasks/echo").get_data(as_text=True)
    assert page.count("task &#39;extract&#39; has not finished yet (state running)") == 1
    store.finish_success(first, '{"rows": 12}', START + timedelta(seconds=9))
    api = client.get(f"/api/v1/runs/{run.run_id}/tasks/echo").get_json()
    assert api["rendered_command"] == "echo 12"
