"""The JSON API and /health, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orchestrator.store import Store
from webui import create_app

START = datetime(2026, 1, 1, tzinfo=UTC)  # the start of the fixtures' clock


def test_dags_api_lists_active_dags(client, store, make_dag, set_next_fire):
    make_dag(
        "berlin",
        schedule="0 2 * * *",
        timezone="Europe/Berlin",
        start_date=START,
        description="Nightly",
        tags=["b", "a"],
    )
    make_dag("manual", paused=True)
    make_dag("gone")
    store.deactivate_dags(["gone"], START, "file removed")
    set_next_fire("berlin", datetime(2026, 1, 2, 1, 0, tzinfo=UTC))

    response = client.get("/api/v1/dags")

    assert response.status_code == 200
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert body["total_entries"] == 2
    berlin, manual = body["dags"]
    assert berlin["schedule_words"] == "At 02:00, Europe/Berlin"
    assert berlin["recent_runs"] == []
    skip = {"fileloc", "schedule_words", "recent_runs"}
    assert {k: berlin[k] for k in list(berlin) if k not in skip} == {
        "dag_id": "berlin",
        "is_paused": False,
        "is_active": True,
        "schedule": "cron 0 2 * * * (Europe/Berlin)",
        "timezone": "Europe/Berlin",
        "next_logical_date": "2026-01-02T01:00:00+00:00",
        "description": "Nightly",
        "tags": ["b", "a"],
        "owners": [],  # issue 27: its tasks' owners
    }
    assert berlin["fileloc"].endswith("conftest.py")
    assert manual["dag_id"] == "manual"
    assert manual["is_paused"] is True
    assert manual["next_logical_date"] is None
    assert manual["schedule"] == "manual only"


def test_one_dag_and_its_runs(client, make_dag, make_runs):
    make_dag("etl")
    runs = make_runs("etl", ["success", "running"])

    assert client.get("/api/v1/dags/etl").get_json()["dag_id"] == "etl"
    body = client.get("/api/v1/dags/etl/runs?limit=1").get_json()
    assert body["total_entries"] == 2  # all of them; one page of 1 shown
    [run] = body["dag_runs"]
    assert run["run_id"] == runs[1].run_id
    assert run["state"] == "running"
    assert run["logical_date"] == "2026-01-01T01:00:00+00:00"


@pytest.mark.parametrize("path", ["/api/v1/dags/nope", "/api/v1/dags/nope/runs", "/api/v1/x"])
def test_api_errors_are_json(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response.mimetype == "application/json"
    assert response.get_json()["status"] == 404


def test_import_errors_api(client, store):
    store.record_import_error("/dags/bad.py", "NameError: name 'x' is not defined", "TB", START)

    body = client.get("/api/v1/import-errors").get_json()

    assert body == {
        "import_errors": [
            {
                "fileloc": "/dags/bad.py",
                "message": "NameError: name 'x' is not defined",
                "traceback": "TB",
                "created_at": "2026-01-01T00:00:00+00:00",
            }
        ],
        "total_entries": 1,
    }


def test_api_refuses_writes_it_does_not_offer(client, make_dag):
    make_dag("etl")
    token = client.get("/api/v1/csrf").get_json()["csrf_token"]
    headers = {"X-CSRF-Token": token}
    assert client.post("/api/v1/dags", headers=headers).status_code == 405
    assert client.delete("/api/v1/dags/etl", headers=headers).status_code == 405
    assert client.post("/api/v1/dags").status_code == 400  # no CSRF token: refused first


def test_health_ok(client, live_cluster):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.get_json()["status"] == "ok"


def test_health_is_503_when_the_database_does_not_answer(settings, tmp_path):
    folder = tmp_path / "not_a_database"
    folder.mkdir()  # sqlite cannot open a directory as its database file
    broken = Store(f"sqlite:///{folder}")
    try:
        app = create_app(settings, broken)
        response = app.test_client().get("/health")
    finally:
        broken.dispose()
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "error"
    assert "database did not answer" in body["message"]
    assert str(folder) not in body["message"]
