"""A UI action that meets a row lock another session holds past the lock timeout gets
503 with Retry-After, not a 500, and changes nothing (PostgreSQL: ``lock_timeout``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import create_engine, text

from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import DbOptions
from tests.webui.conftest import START, build_dag
from webui import create_app

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url(pg_database):
    from tests.conftest import _truncate_pg

    _truncate_pg(pg_database)
    return pg_database


def test_an_action_blocked_by_a_held_row_lock_answers_503_and_changes_nothing(
    pg_url, tmp_path, clock
):
    settings = Settings.load(
        {}, cwd=str(tmp_path), database_url=pg_url, state_dir=str(tmp_path / "state")
    )
    store = Store(pg_url, options=DbOptions(lock_timeout=0.3))
    other = create_engine(pg_url)
    try:
        store.save_dag(build_dag("locked"), START)
        run = store.trigger_run("locked", START)
        app = create_app(settings, store, clock=clock)
        app.config["TESTING"] = True
        client = app.test_client()
        token = client.get("/api/v1/csrf").get_json()["csrf_token"]
        headers = {"X-CSRF-Token": token}
        with other.connect() as holder:  # another session holds the run's row
            holder.execute(
                text("SELECT id FROM dag_runs WHERE run_id = :r FOR UPDATE"), {"r": run.run_id}
            )
            api = client.post(f"/api/v1/runs/{run.run_id}/cancel", headers=headers)
            page = client.post(f"/runs/{run.run_id}/cancel", data={"csrf_token": token})
            holder.rollback()
        for response in (api, page):
            assert response.status_code == 503
            assert response.headers["Retry-After"] == "1"
            assert "the database is busy" in response.get_data(as_text=True)
        assert api.get_json()["detail"].startswith("the database is busy")
        assert store.get_run(run.run_id).state == "queued"  # nothing changed
        # the lock released, the same action goes through
        again = client.post(f"/api/v1/runs/{run.run_id}/cancel", headers=headers)
        assert again.status_code == 200, again.get_data(as_text=True)
        assert store.get_run(run.run_id).state == "cancelled"
        assert clock.now() - START < timedelta(days=1)  # the app's fake clock
    finally:
        other.dispose()
        store.dispose()
