"""The built-in triggers (issue 30): date/time and timedelta, a file (polled), an HTTP
status, another DAG's run state and an asset event, each deferring a real task that
its event resumes, on both backends."""

from __future__ import annotations

import http.server
import json
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.engine.triggerer import Triggerer

DAG = """
from datetime import datetime, timedelta, timezone
from orchestrator import DAG, Asset, task
from orchestrator.triggers import *

with DAG("builtin", schedule=None) as dag:
    @task(outlets=[Asset("s3://lake/orders")])
    def produce(ctx):
        return 1

    @task
    def wait(ctx):
        ctx.defer(trigger={trigger}, method_name="resume")

def resume(ctx, event):
    return event
"""

OTHER = """
from datetime import datetime
from orchestrator import DAG, task
with DAG("other", schedule=None) as dag:
    @task
    def work(ctx):
        return 1
"""


def _defer(harness, write_dag, trigger: str) -> str:
    write_dag("builtin.py", DAG.format(trigger=trigger))
    harness.parse()
    run = harness.store.trigger_run("builtin", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    assert harness.store.task_instance(run.run_id, "wait").state == "deferred"
    return run.run_id


def _resumed(harness, run_id: str, seconds: float = 15.0):
    t = Triggerer(harness.store, harness.clock, harness.settings, triggerer_id="t-builtin")
    t.start(harness.clock.now())
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t.tick(harness.clock.now(), force=True)
            ti = harness.store.task_instance(run_id, "wait")
            if ti.state != "deferred":
                break
            t.wait(0.05)
        assert ti.state == "queued", ti.error
    finally:
        t.close(harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    ti = harness.store.task_instance(run_id, "wait")
    assert ti.state == "success", ti.error
    return json.loads(harness.store.results(run_id, ["wait"])["wait"])


def test_date_time_and_time_delta_triggers_fire_at_their_moment(harness, write_dag):
    soon = datetime.now(UTC) + timedelta(seconds=0.3)
    run_id = _defer(
        harness, write_dag, f"DateTimeTrigger(datetime.fromisoformat({soon.isoformat()!r}))"
    )
    assert _resumed(harness, run_id) == soon.isoformat()
    assert datetime.now(UTC) >= soon
    harness.clock.advance(timedelta(seconds=1))
    run_id2 = _defer(harness, write_dag, "TimeDeltaTrigger(timedelta(seconds=0.2))")
    assert datetime.fromisoformat(_resumed(harness, run_id2)) <= datetime.now(UTC)


def test_a_file_trigger_fires_when_its_glob_matches(harness, write_dag, tmp_path):
    pattern = str(tmp_path / "landing" / "*.csv")
    run_id = _defer(harness, write_dag, f"FileTrigger({pattern!r}, poke_interval=0.05)")
    (tmp_path / "landing").mkdir()

    def later():
        time.sleep(0.3)
        (tmp_path / "landing" / "a.csv").write_text("x")

    threading.Thread(target=later).start()
    event = _resumed(harness, run_id)
    assert event == {"filepath": pattern, "files": [str(tmp_path / "landing" / "a.csv")]}


def test_an_http_trigger_fires_on_its_status(harness, write_dag):
    answers = iter([503, 503, 200])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            code = next(answers, 200)
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"ready" if code == 200 else b"not yet")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/ready"
        run_id = _defer(harness, write_dag, f"HttpTrigger({url!r}, poke_interval=0.05)")
        assert _resumed(harness, run_id) == {"url": url, "status": 200, "body": "ready"}
    finally:
        server.shutdown()
        server.server_close()


def test_a_dag_state_trigger_fires_when_the_other_run_succeeds(harness, write_dag):
    write_dag("other.py", OTHER)
    harness.parse()
    other = harness.store.trigger_run("other", harness.clock.now())
    at = other.logical_date.isoformat()
    run_id = _defer(
        harness,
        write_dag,
        f"DagStateTrigger('other', datetime.fromisoformat({at!r}), poke_interval=0.05)",
    )
    assert harness.run_until_finished(other.run_id).state == "success"
    assert _resumed(harness, run_id) == {"dag_id": "other", "logical_date": at, "state": "success"}


def test_an_asset_event_trigger_fires_on_the_next_event(harness, write_dag):
    run_id = _defer(harness, write_dag, "AssetEventTrigger('s3://lake/orders', poke_interval=0.05)")
    harness.clock.advance(timedelta(seconds=1))
    event = harness.store.emit_asset_event(
        "s3://lake/orders", {"rows": 7}, datetime.now(UTC), emitter="test"
    )
    got = _resumed(harness, run_id)
    assert got["id"] == event.id and got["extra"] == {"rows": 7}


@pytest.mark.parametrize(
    "bad, message",
    [
        ("DateTimeTrigger(datetime(2030, 1, 1))", "timezone-aware"),
        ("FileTrigger('')", "FileTrigger filepath"),
        ("HttpTrigger('ftp://x')", "http(s)://"),
    ],
)
def test_a_built_in_trigger_given_bad_arguments_fails_the_try_saying_which(
    harness, write_dag, bad, message
):
    write_dag("builtin.py", DAG.format(trigger=bad))
    harness.parse()
    run = harness.store.trigger_run("builtin", harness.clock.now())
    harness.tick()
    harness.worker.run_until_idle()
    ti = harness.store.task_instance(run.run_id, "wait")
    assert ti.state == "failed" and message in ti.error
