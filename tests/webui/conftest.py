"""Web UI fixtures: an app on the parametrised store, and factories for its data.

DAGs get into the store the way the DAG processor puts them there
(``store.save_dag(serialize_dag(dag), now)``), runs through ``store.trigger_run``.
Finished run states, which only a worker can produce, are set directly in the test
database by :func:`set_run_state` (test set-up, never app code).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core import models as m
from orchestrator.store.core.records import RunRecord
from webui import create_app

START = datetime(2026, 1, 1, tzinfo=UTC)  # as in tests/conftest.py

MakeDag = Callable[..., dict[str, Any]]


def build_dag(dag_id: str, **kwargs: Any) -> dict[str, Any]:
    """A serialized two-task DAG, as the DAG processor would store it."""
    kwargs.setdefault("schedule", None)
    with DAG(dag_id, **kwargs) as dag:

        @task
        def extract(ctx):
            return 1

        @task
        def load(ctx):
            return ctx.upstream("extract")

        extract >> load
    return serialize_dag(dag)


@pytest.fixture
def make_dag(store: Store) -> MakeDag:
    def make(dag_id: str, **kwargs: Any) -> dict[str, Any]:
        data = build_dag(dag_id, **kwargs)
        store.save_dag(data, START)
        return data

    return make


@pytest.fixture
def make_runs(store: Store) -> Callable[..., list[RunRecord]]:
    """Trigger one run per state, an hour apart, oldest first; set their states."""

    def make(dag_id: str, states: list[str]) -> list[RunRecord]:
        runs = []
        for i, state in enumerate(states):
            at = START + timedelta(hours=i)
            run = store.trigger_run(dag_id, at, logical_date=at)
            if state != "queued":
                set_run_state(store, run.run_id, state, at)
            runs.append(store.get_run(run.run_id))
        return runs

    return make


def set_run_state(store: Store, run_id: str, state: str, at: datetime) -> None:
    ended = state in {"success", "failed", "cancelled"}
    values: dict[str, Any] = {"state": state, "start_date": at + timedelta(seconds=5)}
    if ended:
        values["end_date"] = at + timedelta(minutes=2, seconds=9)
    with store.write() as conn:
        conn.execute(update(m.dag_runs).where(m.dag_runs.c.run_id == run_id).values(**values))


@pytest.fixture
def set_next_fire(store: Store) -> Callable[[str, datetime], None]:
    """Set a DAG's next fire time through the scheduler's own transition."""
    return lambda dag_id, at: _move_cursor(store, dag_id, at)


def _move_cursor(store: Store, dag_id: str, next_logical_date: datetime) -> None:
    dag = store.get_dag(dag_id)
    moved = store.create_scheduled_runs(
        dag_id,
        dag.version_hash,
        cursor=dag.next_logical_date,
        new_cursor=next_logical_date,
        fire_times=[],
        decisions=[],
        now=START,
    )
    assert moved == 0  # no runs created, but the cursor moved
    assert store.get_dag(dag_id).next_logical_date == next_logical_date


@pytest.fixture
def app(settings: Settings, store: Store, clock: Any) -> Flask:
    app = create_app(settings, store, clock=clock)  # the fixtures' fake clock: now is START
    app.config["TESTING"] = True
    return app


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def build_shell_dag(dag_id: str, **kwargs: Any) -> dict[str, Any]:
    """extract -> (load, archive shell task) with params, as the processor stores it."""
    kwargs.setdefault("schedule", "0 2 * * *")
    kwargs.setdefault("timezone", "UTC")
    kwargs.setdefault("start_date", datetime(2026, 1, 1))
    kwargs.setdefault("params", {"target": "/tmp/out dir", "n": 3, "dry_run": False})
    with DAG(dag_id, **kwargs) as dag:

        @task
        def extract(ctx):
            return {"rows": 1}

        @task
        def load(ctx):
            return ctx.upstream("extract")

        archive = dag.shell("archive", "tar czf {{ params.target }}/{{ ds }}.tgz /etc/hostname")
        extract >> [load, archive]
    return serialize_dag(dag)


@pytest.fixture
def csrf(client: FlaskClient) -> str:
    """This test client's session CSRF token (as a page's forms carry it)."""
    return client.get("/api/v1/csrf").get_json()["csrf_token"]


@pytest.fixture
def worked_run(store: Store, settings: Settings) -> Callable[..., Any]:
    """A run of a shell DAG taken through the real transitions: extract succeeded
    (with a log file), load failed once and waits for its retry; archive waits."""

    def make(dag_id: str = "pipeline", *, result: str = '{"rows": 1}', log: str = "hello\n",
             error: str = "ValueError: boom") -> Any:  # fmt: skip
        data = build_shell_dag(dag_id, default_retries=1)
        store.save_dag(data, START)
        run = store.trigger_run(dag_id, START, conf={"n": 5})
        store.start_queued_runs(START)
        store.release_ready(START)
        [claim] = store.claim(
            "worker-1", START + timedelta(seconds=2), timedelta(seconds=30), limit=5
        )
        path = Path(settings.log_dir) / claim.log_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(log)
        store.finish_success(claim, result, START + timedelta(seconds=9))
        store.release_ready(START + timedelta(seconds=10))
        claims = store.claim(
            "worker-1", START + timedelta(seconds=11), timedelta(seconds=30), limit=5
        )
        load = next(c for c in claims if c.task_id == "load")
        store.finish_failure(load, error, 1, START + timedelta(seconds=15))
        return store.get_run(run.run_id)

    return make


@pytest.fixture
def live_cluster(store: Store) -> None:
    """A scheduler holding the leader lease and a worker that just heartbeated (at START,
    the app's fake now), as /health wants them."""
    assert store.acquire_leadership("scheduler-1", START, timedelta(seconds=30)) == 1
    store.register_worker("worker-1", "host", 1, ["default"], START)


LOG_TRY_1 = (
    "2026-01-01 00:00:11,000 INFO starting dag_id=pipeline task_id=load try=1\n"
    "2026-01-01 00:00:12,000 DEBUG connecting to the warehouse\n"
    "2026-01-01 00:00:13,000 WARNING \x1b[33mslow disk\x1b[0m <b>not bold</b>\n"
    "2026-01-01 00:00:14,000 ERROR ValueError: boom\n"
    "Traceback (most recent call last):\n"
)
LOG_TRY_2 = (
    "2026-01-01 02:00:01,000 INFO starting dag_id=pipeline task_id=load try=2\n"
    + "".join(f"2026-01-01 02:00:02,000 INFO loading row {i}\n" for i in range(1, 41))
    + "2026-01-01 02:03:05,000 INFO \x1b[32mdone\x1b[0m: 40 rows\n"
)


@pytest.fixture
def timed_run(store: Store, settings: Settings) -> Callable[..., Any]:
    """A run taken through the real transitions at chosen times (issue 27): extract ran
    38 ms; load failed its try 1 (a log with levels and ANSI colours) and its try 2
    ran 3 m 04 s (a 42-line log); archive never ran. Returns the run."""

    def make(dag_id: str = "pipeline", *, timezone: str = "UTC") -> Any:
        store.save_dag(build_shell_dag(dag_id, default_retries=1, timezone=timezone), START)
        run = store.trigger_run(dag_id, START, conf={})
        store.start_queued_runs(START)
        store.release_ready(START)
        [extract] = store.claim(
            "worker-1", START + timedelta(seconds=2), timedelta(seconds=30), limit=5
        )
        _write_log(settings, extract.log_path, "2026-01-01 00:00:02,000 INFO extracted\n")
        store.finish_success(extract, '{"rows": 1}', START + timedelta(seconds=2, milliseconds=38))
        store.release_ready(START + timedelta(seconds=10))
        claims = store.claim(
            "worker-1", START + timedelta(seconds=11), timedelta(seconds=30), limit=5
        )
        load = next(c for c in claims if c.task_id == "load")
        _write_log(settings, load.log_path, LOG_TRY_1)
        store.finish_failure(load, "ValueError: boom", 1, START + timedelta(seconds=15))
        later = START + timedelta(hours=2)
        store.release_ready(later)
        again = [
            c
            for c in store.claim("worker-2", later, timedelta(hours=1), limit=5)
            if c.task_id == "load"
        ]
        [retry] = again
        _write_log(settings, retry.log_path, LOG_TRY_2)
        store.finish_success(retry, '{"rows": 40}', later + timedelta(minutes=3, seconds=4))
        make.running = next(c for c in claims if c.task_id == "archive")  # type: ignore[attr-defined]
        return store.get_run(run.run_id)

    return make


def _write_log(settings: Settings, rel_path: str, text: str) -> None:
    path = Path(settings.log_dir) / rel_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
