"""Alerts from real scenarios on the fake clock, delivered to a local HTTP receiver."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import text

from orchestrator.observability.alerts.delivery import AlertDelivery, backoff
from orchestrator.observability.alerts.watchdog import AlertWatchdog

RESTORE_INDEX = (
    "CREATE UNIQUE INDEX ux_dag_runs_one_per_fire_time ON dag_runs (dag_id, logical_date) "
    "WHERE run_type IN ('scheduled', 'backfill')"
)


class Receiver:
    """An HTTP server on 127.0.0.1 recording POSTed JSON; answers ``codes`` in turn."""

    def __init__(self, codes: list[int] | None = None) -> None:
        self.bodies: list[dict] = []
        self.codes = list(codes or [])
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.bodies.append(body)
                code = receiver.codes.pop(0) if receiver.codes else 200
                self.send_response(code)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _watch(harness, settings):
    return AlertWatchdog(harness.store, settings), AlertDelivery(harness.store, settings)


def test_dead_letter_and_run_failed_reach_the_webhook_with_a_retry_after_500(
    harness, settings, write_dag, receiver
):
    write_dag(
        "bad.py",
        f"""
        from orchestrator import DAG, task
        from orchestrator.alerts import webhook

        with DAG("bad", schedule=None, alerts=[webhook("{receiver.url}")]) as dag:
            @task
            def boom():
                raise RuntimeError("kaboom")
        """,
    )
    harness.parse()
    watchdog, delivery = _watch(harness, settings)
    watchdog.check(harness.clock.now())  # cursor starts here: older history is not alerted
    run = harness.store.trigger_run("bad", harness.clock.now())
    harness.run_until_finished(run.run_id)
    now = harness.clock.now()
    kinds = sorted(a.kind for a in watchdog.check(now))
    assert kinds == ["run_failed", "task_dead_lettered"]
    assert watchdog.check(now) == []  # one alert per event, not one per check
    receiver.codes = [500]  # the first POST fails
    assert delivery.tick(now) == 2
    assert len(receiver.bodies) == 2
    assert delivery.tick(now) == 0  # the failed one waits for its backoff
    harness.clock.advance(backoff(1))
    assert delivery.tick(harness.clock.now()) == 1
    assert len(receiver.bodies) == 3
    assert receiver.bodies[0] == receiver.bodies[2]  # the retry sends the same body
    dead = next(b for b in receiver.bodies if b["kind"] == "task_dead_lettered")
    assert dead["version"] == 1 and dead["dag_id"] == "bad" and dead["run_id"] == run.run_id
    assert dead["task_id"] == "boom" and dead["try_number"] == 1
    assert "kaboom" in dead["message"]
    states = [
        d["state"] for a in harness.store.list_alerts() for d in harness.store.deliveries(a.id)
    ]
    assert states == ["delivered", "delivered"]


def test_recovery_after_a_failed_run(harness, settings, write_dag, tmp_path):
    flag = tmp_path / "fail"
    flag.write_text("1")
    write_dag(
        "flaky.py",
        f"""
        import os
        from orchestrator import DAG, task

        with DAG("flaky", schedule=None) as dag:
            @task
            def step():
                if os.path.exists({str(flag)!r}):
                    raise RuntimeError("down")
        """,
    )
    harness.parse()
    watchdog, _ = _watch(harness, settings)
    watchdog.check(harness.clock.now())
    first = harness.store.trigger_run("flaky", harness.clock.now())
    harness.run_until_finished(first.run_id)
    harness.clock.advance(minutes=1)
    flag.unlink()
    second = harness.store.trigger_run("flaky", harness.clock.now())
    harness.run_until_finished(second.run_id)
    raised = watchdog.check(harness.clock.now())
    recovered = [a for a in raised if a.kind == "recovered"]
    assert [a.run_id for a in recovered] == [second.run_id]
    harness.clock.advance(minutes=1)
    third = harness.store.trigger_run("flaky", harness.clock.now())
    harness.run_until_finished(third.run_id)
    assert [a.kind for a in watchdog.check(harness.clock.now())] == []  # success after success


def test_missed_run_from_a_scheduler_gap(harness, settings, write_dag):
    write_dag(
        "hourly.py",
        """
        from datetime import datetime, timezone
        from orchestrator import DAG, task

        with DAG("hourly", schedule="@hourly", misfire_grace=300,
                 start_date=datetime(2025, 12, 31, tzinfo=timezone.utc)) as dag:
            @task
            def t():
                pass
        """,
    )
    store, clock = harness.store, harness.clock
    harness.parse()
    watchdog, _ = _watch(harness, settings)
    harness.tick()  # the scheduler runs at 00:00: the 00:00 run is created on time
    assert watchdog.check(clock.now()) == []
    clock.advance(minutes=30)
    assert watchdog.check(clock.now()) == []  # 01:00 is not due yet
    clock.advance(minutes=34)  # 01:04: due, but within its grace
    assert watchdog.check(clock.now()) == []
    clock.advance(minutes=2)  # 01:06, the scheduler has not ticked since 00:00
    missed = watchdog.check(clock.now())
    assert [(a.kind, a.logical_date.hour) for a in missed] == [("run_missed", 1)]
    assert watchdog.check(clock.now()) == []  # deduplicated
    harness.tick()  # the scheduler is back: the run for 01:00 now exists
    clock.advance(hours=1, minutes=6)  # 02:12: the 02:00 run was never created
    harness.tick()
    assert watchdog.check(clock.now()) == []  # this time the scheduler kept up
    assert [a.kind for a in store.list_alerts()] == ["run_missed"]


def test_paused_dag_is_not_missed(harness, settings, write_dag):
    write_dag(
        "p.py",
        """
        from datetime import datetime, timezone
        from orchestrator import DAG, task

        with DAG("p", schedule="@hourly", paused=True,
                 start_date=datetime(2025, 12, 31, tzinfo=timezone.utc)) as dag:
            @task
            def t():
                pass
        """,
    )
    harness.parse()
    watchdog, _ = _watch(harness, settings)
    harness.clock.advance(hours=3)
    assert watchdog.check(harness.clock.now()) == []


def test_late_run_against_its_deadline(harness, settings, write_dag, tmp_path):
    gate = tmp_path / "gate"
    write_dag(
        "slow.py",
        f"""
        import os
        from orchestrator import DAG, task

        with DAG("slow", schedule=None, deadline=600) as dag:
            @task(retries=5, retry_delay=60, retry_exponential=False)
            def wait():
                if not os.path.exists({str(gate)!r}):
                    raise RuntimeError("not yet")
        """,
    )
    harness.parse()
    watchdog, _ = _watch(harness, settings)
    run = harness.store.trigger_run("slow", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    harness.clock.advance(minutes=9)
    assert [a.kind for a in watchdog.check(harness.clock.now())] == []
    harness.clock.advance(minutes=2)
    late = watchdog.check(harness.clock.now())
    assert [(a.kind, a.run_id) for a in late] == [("run_late", run.run_id)]
    gate.write_text("ok")
    harness.run_until_finished(run.run_id, step=timedelta(seconds=30))
    assert [a.kind for a in watchdog.check(harness.clock.now())] == []  # once per run


def test_duplicate_runs_for_one_fire_time(harness, settings, write_dag, store, clock):
    write_dag(
        "d.py",
        """
        from orchestrator import DAG, task

        with DAG("d", schedule=None) as dag:
            @task
            def t():
                pass
        """,
    )
    harness.parse()
    watchdog, _ = _watch(harness, settings)
    # a manual run at the same instant as a scheduled one is allowed (issue 3) ...
    store.trigger_run("d", clock.now())
    store.trigger_run("d", clock.now(), run_type="scheduled")
    assert [a.kind for a in watchdog.check(clock.now())] == []
    # ... two scheduled ones are not: break the index that prevents it, as a bug would
    with store.engine.begin() as conn:
        conn.execute(text("DROP INDEX ux_dag_runs_one_per_fire_time"))
    bad = None
    try:
        bad = store.trigger_run("d", clock.now(), run_type="backfill")
        dup = watchdog.check(clock.now())
        assert [a.kind for a in dup] == ["duplicate_run"]
        assert "d__scheduled__" in dup[0].message and "d__backfill__" in dup[0].message
        assert watchdog.check(clock.now()) == []
    finally:  # the PostgreSQL test database outlives this test: put the index back
        with store.engine.begin() as conn:
            if bad is not None:
                conn.execute(text("DELETE FROM dag_runs WHERE run_id = :r"), {"r": bad.run_id})
            conn.execute(text(RESTORE_INDEX))


def test_callbacks_run_in_a_child_process(harness, settings, write_dag, tmp_path):
    out = tmp_path / "called.json"
    write_dag(
        "cb.py",
        f"""
        import json, os
        from orchestrator import DAG, task

        def on_failure(alert):
            with open({str(out)!r}, "w") as f:
                json.dump({{"pid": os.getpid(), "kind": alert["kind"]}}, f)

        with DAG("cb", schedule=None, on_failure=on_failure) as dag:
            @task
            def boom():
                raise RuntimeError("x")
        """,
    )
    harness.parse()
    watchdog, delivery = _watch(harness, settings)
    watchdog.check(harness.clock.now())
    run = harness.store.trigger_run("cb", harness.clock.now())
    harness.run_until_finished(run.run_id)
    watchdog.check(harness.clock.now())
    assert delivery.tick(harness.clock.now()) == 1
    called = json.loads(out.read_text())
    import os

    assert called["kind"] == "run_failed" and called["pid"] != os.getpid()
