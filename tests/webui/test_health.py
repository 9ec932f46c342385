"""/health checks a write, the database's identity, free disk space, the scheduler's
lease and the workers' heartbeats, and answers 503 (JSON) naming what is wrong."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from orchestrator.store import Store
from orchestrator.store.core.identity import DatabaseGoneError
from tests.webui.conftest import START
from webui import create_app

pytestmark = pytest.mark.usefixtures("live_cluster")


def test_health_is_ok_when_everything_is(client):
    response = client.get("/health")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["status"] == "ok"
    assert {name: c["ok"] for name, c in body["checks"].items()} == {
        "database": True,
        "identity": True,
        "disk": True,
        "scheduler": True,
        "workers": True,
    }
    assert body["checks"]["scheduler"]["leader"] == "scheduler-1"
    assert body["checks"]["workers"]["alive"] == 1


def test_health_fails_when_the_database_refuses_writes(settings, database_url, store, clock):
    """Reads still work, so the old read-only check said ok."""
    if database_url.startswith("sqlite"):
        path = make_url(database_url).database
        read_only = Store(f"sqlite:///file:{path}?mode=ro&uri=true")
        try:
            response = create_app(settings, read_only, clock=clock).test_client().get("/health")
        finally:
            read_only.dispose()
    else:
        name = make_url(database_url).database
        admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
        read_only = Store(database_url)
        try:
            response = create_app(settings, read_only, clock=clock).test_client().get("/health")
        finally:
            read_only.dispose()
            with admin.connect() as conn:
                conn.execute(text(f'ALTER DATABASE "{name}" RESET default_transaction_read_only'))
            admin.dispose()
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "error"
    assert body["checks"]["database"]["ok"] is False
    assert "refused a write" in body["message"]
    assert body["checks"]["scheduler"]["ok"] is True  # the reads still answered
    assert store.leader()[0] == "scheduler-1"  # the probe changed nothing


def test_health_fails_when_the_disk_is_nearly_full(settings, store, clock, tmp_path):
    free_mb = shutil.disk_usage(tmp_path).free / 2**20  # the state folder's disk
    app = create_app(settings.with_(health_min_free_mb=free_mb * 2), store, clock=clock)
    response = app.test_client().get("/health")
    assert response.status_code == 503
    body = response.get_json()
    assert body["checks"]["disk"]["ok"] is False
    assert "MB free on the state folder's disk" in body["message"]
    assert set(body["checks"]["disk"]["free_mb"]) >= {"state folder"}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_health_fails_when_the_sqlite_file_is_deleted(client, database_url, store):
    path = make_url(database_url).database
    assert client.get("/health").status_code == 200
    os.unlink(path)
    response = client.get("/health")
    assert response.status_code == 503
    body = response.get_json()
    assert body["checks"]["identity"]["ok"] is False
    assert "deleted or replaced" in body["message"]
    assert path not in response.get_data(as_text=True)  # no paths to anonymous callers
    with pytest.raises(DatabaseGoneError, match="was deleted while in use"):
        store.register_worker("worker-2", "host", 2, ["default"], START)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_actions_on_a_deleted_sqlite_file_are_refused_with_503(client, database_url, make_dag):
    make_dag("etl")
    token = client.get("/api/v1/csrf").get_json()["csrf_token"]
    os.unlink(make_url(database_url).database)
    r = client.post("/api/v1/dags/etl/runs", json={}, headers={"X-CSRF-Token": token})
    assert r.status_code == 503
    assert "deleted or replaced while in use" in r.get_json()["detail"]


def test_health_fails_when_no_scheduler_ticks_and_no_worker_heartbeats(settings, store, clock):
    clock.set(START + timedelta(seconds=31))  # past the lease: the scheduler stopped renewing
    response = create_app(settings, store, clock=clock).test_client().get("/health")
    assert response.status_code == 503
    body = response.get_json()
    assert body["checks"]["scheduler"]["ok"] is False
    assert (
        "no scheduler is ticking: the leader lease expired at 2026-01-01T00:00:30"
        in (body["message"])
    )
    assert body["checks"]["workers"] == {
        "ok": False,
        "message": "no worker heartbeated in the last 30s (last at 2026-01-01T00:00:00+00:00)",
        "alive": 0,
        "last_heartbeat": "2026-01-01T00:00:00+00:00",
    }
    assert body["checks"]["database"]["ok"] is True


class _Monotonic:
    """A fake ``time.monotonic`` for the health module's reuse window."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_health_asks_the_database_once_a_second_and_judges_each_request_by_its_time(
    settings, store, clock, monkeypatch
):
    """Probes in a burst cost one read and one rolled-back write; heartbeats and the lease
    are still compared with each request's own time, and a new answer comes after the
    window."""
    from webui.views import health

    fake = _Monotonic()
    monkeypatch.setattr(health.time, "monotonic", fake)
    writes = []
    real_probe = store.probe_write
    monkeypatch.setattr(store, "probe_write", lambda: (writes.append(1), real_probe())[1])
    client = create_app(settings, store, clock=clock).test_client()

    for _ in range(5):
        assert client.get("/health").status_code == 200
    assert len(writes) == 1

    clock.set(START + timedelta(seconds=31))  # inside the window: no new read, yet judged now
    body = client.get("/health").get_json()
    assert len(writes) == 1
    assert body["checks"]["workers"]["ok"] is False
    assert body["checks"]["scheduler"]["ok"] is False

    # the cluster renews its lease and heartbeats; the next answer after the window sees it
    store.acquire_leadership("scheduler-1", START + timedelta(seconds=31), timedelta(seconds=30))
    store.register_worker("worker-1", "host", 1, ["default"], START + timedelta(seconds=31))
    fake.now += health.DB_CHECK_SECONDS
    response = client.get("/health")
    assert len(writes) == 2
    assert response.status_code == 200, response.get_json()


def test_health_reports_a_write_refusal_found_by_the_answer_it_reuses(
    settings, store, clock, monkeypatch
):
    from webui.views import health

    fake = _Monotonic()
    monkeypatch.setattr(health.time, "monotonic", fake)

    def refuse() -> None:
        raise OSError("attempt to write a readonly database")

    monkeypatch.setattr(store, "probe_write", refuse)
    client = create_app(settings, store, clock=clock).test_client()
    for _ in range(2):  # the second request reuses the failed answer: still 503
        response = client.get("/health")
        assert response.status_code == 503
        assert (
            "refused a write (OSError: attempt to write a readonly database)"
            in (response.get_json()["checks"]["database"]["message"])
        )
