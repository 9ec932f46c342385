"""orchestrator.client.Client against a live `orchestrator webserver` process, with a
scheduler and a worker as real processes on the same database (both backends): list,
trigger with conf and a logical date, wait, read the log, clear, mark, pause, and the
errors (401, 403, 404, 409, unreachable, timeout) as ClientError with the API's reason."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from orchestrator import Client, ClientError
from orchestrator.client import RunTimeout
from tests.system.cluster import cluster, wait_for

FAST = {
    "ORCHESTRATOR_LEASE_SECONDS": "4",
    "ORCHESTRATOR_HEARTBEAT_SECONDS": "1",
    "ORCHESTRATOR_SCHEDULER_INTERVAL": "0.2",
    "ORCHESTRATOR_WORKER_POLL_SECONDS": "0.5",
}

DAG = """
from orchestrator import DAG, Asset, task

with DAG("greet", schedule=None, params={"who": "world"}) as dag:

    @task
    def hello(ctx):
        ctx.log.info("hello %s at %s", ctx.params["who"], ctx.logical_date.isoformat())
        return ctx.params["who"]

    @task
    def after(ctx):
        return ctx.upstream("hello")

    hello >> after

sales = Asset("warehouse://sales/daily")

with DAG("on_sales", schedule=[sales]) as on_sales:

    @task
    def report(ctx):
        return [e.extra for e in ctx.triggering_asset_events]

with DAG("slow", schedule=None) as slow:

    @task
    def nap(ctx):
        import time

        time.sleep(30)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _up(base: str) -> bool:
    try:
        return requests.get(base + "/login", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def test_the_client_against_a_live_webserver(settings, store, write_dag, tmp_path):
    write_dag("greet.py", DAG)
    now = datetime.now(UTC)
    store.add_user("ops", "long enough password", now, role="operator")
    store.add_user("vera", "long enough password", now, role="viewer")
    operator = store.create_token("ops", now, name="ci").token
    viewer = store.create_token("vera", now, name="dash").token
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with cluster(settings, tmp_path, ORCHESTRATOR_WEB_LOGIN="always", **FAST) as c:
        procs = [
            c.start("webserver", "--port", str(port)),
            c.start("scheduler"),
            c.start("worker", "--concurrency", "2"),
        ]
        wait_for(lambda: _up(base), "the web server" + c.logs()[-800:], 60)
        ops = Client(base, operator, timeout=20)
        assert ops.me() == {"user": "ops", "role": "operator", "via": "token"}
        wait_for(lambda: {"greet", "slow"} <= {d["dag_id"] for d in ops.list_dags()}, "parse", 60)
        # what any process of this user (a task) could read of theirs: not the database URL
        # (the worker wipes it when it starts: wait until it registered)
        wait_for(lambda: _workers_registered(store), "the worker to register", 60)
        for proc in procs:
            block = Path(f"/proc/{proc.pid}/environ").read_bytes()
            assert b"ORCHESTRATOR_DATABASE_URL" not in block and b"PATH=" not in block, proc.args

        when = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
        run_id = ops.trigger("greet", {"who": "ada"}, logical_date=when)
        done = ops.wait(run_id, timeout=90, poll=0.3)
        assert done["state"] == "success", c.logs()[-2000:]
        [listed] = ops.list_runs("greet")
        assert listed["run_id"] == run_id and listed["logical_date"] == when.isoformat()
        assert listed["triggered_by"] == "api:ops/token:ci"
        log = ops.log(run_id, "hello")
        assert f"hello ada at {when.isoformat()}" in log["text"] and log["finished"]
        assert ops.log(run_id, "hello", offset=log["next_offset"])["text"] == ""

        assert "Cleared hello, after" in ops.clear(run_id, "hello", downstream=True)
        assert ops.wait(run_id, timeout=90, poll=0.3)["state"] == "success"
        assert "Marked after" in ops.mark(run_id, "after", "failed")
        assert "paused" in ops.pause("greet")
        assert ops.get_dag("greet")["is_paused"] is True
        assert "unpaused" in ops.unpause("greet")
        kinds = {e["kind"] for e in ops.events(actor="api:ops")}
        assert {"run_created", "task_cleared", "task_marked_failed", "dag_paused"} <= kinds

        # errors carry the API's reason
        with pytest.raises(ClientError) as exc:
            ops.trigger("greet", {"who": 1})
        assert exc.value.status == 400 and "param 'who' must be a string" in exc.value.reason
        with pytest.raises(ClientError) as exc:
            ops.trigger("greet", {"who": "ada"}, logical_date=when)
        assert exc.value.status == 409 and "already has a run" in exc.value.reason
        with pytest.raises(ClientError) as exc:
            ops.get_run("nope")
        assert exc.value.status == 404 and "nope" in exc.value.reason
        with pytest.raises(ClientError) as exc:
            ops.log(run_id, "hello", 7)
        assert exc.value.status == 404 and "has no try 7" in exc.value.reason
        with pytest.raises(ClientError) as exc:
            Client(base, viewer).pause("greet")
        assert exc.value.status == 403
        assert exc.value.reason == "this needs the operator role; vera acts as viewer"
        assert exc.value.body["status"] == 403
        with pytest.raises(ClientError) as exc:
            Client(base, "orc_0123456789ab_" + "x" * 43).list_dags()
        assert (exc.value.status, exc.value.reason) == (401, "unknown token")
        with pytest.raises(ClientError) as exc:
            Client(base).list_dags()  # no token, and this server wants a login
        assert exc.value.status == 401

        # an external asset event starts the DAG scheduled on the asset, once
        answer = ops.emit_asset_event("warehouse://sales/daily", {"rows": 3})
        assert answer["event"]["extra"] == {"rows": 3}
        assert answer["event"]["emitter"] == "api:ops/token:ci"
        wait_for(lambda: ops.list_runs("on_sales"), "the asset-triggered run", 60)
        [asset_run] = ops.list_runs("on_sales")
        assert ops.wait(asset_run["run_id"], timeout=90, poll=0.3)["state"] == "success"
        with pytest.raises(ClientError) as exc:
            ops.emit_asset_event("warehouse://nobody/names/this")
        assert exc.value.status == 404 and "warehouse://nobody/names/this" in exc.value.reason
        with pytest.raises(ClientError) as exc:
            Client(base, viewer).emit_asset_event("warehouse://sales/daily")
        assert exc.value.status == 403
        assert len(ops.list_runs("on_sales")) == 1

        slow = ops.trigger("slow")
        with pytest.raises(RunTimeout) as exc:
            ops.wait(slow, timeout=1, poll=0.2)
        assert exc.value.run["state"] in ("queued", "running") and "still" in exc.value.reason
        assert "Cancelled" in ops.cancel(slow)
    with pytest.raises(ClientError) as exc:
        Client(base, operator, timeout=2).list_dags()  # the server is gone
    assert exc.value.status is None and "127.0.0.1" in exc.value.reason


def _workers_registered(store) -> int:
    from sqlalchemy import func, select

    from orchestrator.store.core import models as m

    with store.read() as conn:
        return conn.execute(select(func.count()).select_from(m.workers)).scalar_one()
