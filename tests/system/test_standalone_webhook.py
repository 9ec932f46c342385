"""`orchestrator standalone` starts a webhook's consuming run at once: the web server
wakes the scheduler in-process (issue 30), whatever ``scheduler_interval`` is."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.system.cluster import cli, free_port, standalone

SECRET = "a-long-random-secret"
DAG = """
from orchestrator import DAG, Asset, task
from orchestrator.watchers import WebhookWatcher

orders = Asset("s3://lake/orders", watchers=[WebhookWatcher(conn_id="shop_hook", path="orders")])

with DAG("load_orders", schedule=orders) as dag:
    @task
    def load(ctx):
        return [e.extra for e in ctx.triggering_asset_events]
"""


def _post(port: int, body: bytes) -> int:
    stamp = str(int(time.time()))
    mac = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/hooks/orders", data=body, method="POST",
        headers={"Orchestrator-Signature": f"t={stamp},v1={mac}",
                 "Orchestrator-Delivery": "order-17", "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except urllib.error.URLError:
        return 0  # not listening yet


@pytest.mark.system
def test_a_webhook_event_starts_its_run_without_waiting_for_the_schedulers_poll(
    tmp_path: Path,
) -> None:
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "load_orders.py").write_text(DAG)
    port = free_port()
    # a scheduler that polls once in ten minutes: only a wakeup starts the run in time
    with standalone(tmp_path, ORCHESTRATOR_WEB_PORT=str(port),
                    ORCHESTRATOR_SCHEDULER_INTERVAL="600"):  # fmt: skip
        end = time.monotonic() + 60
        added = None
        while time.monotonic() < end:
            if added is None or added.returncode != 0:  # once the database is there
                added = cli(tmp_path, "connections", "add", "shop_hook", "--conn-type", "http",
                            "--password", SECRET)  # fmt: skip
            status = (
                _post(port, json.dumps({"order_id": 17}).encode()) if not added.returncode else 0
            )
            if status == 202:
                break
            assert status in (0, 404, 503), status  # not up, not parsed, no secret yet
            time.sleep(0.2)
        assert status == 202, added.stderr
        posted = time.monotonic()
        while time.monotonic() - posted < 20:
            runs = json.loads(cli(tmp_path, "runs", "list", "load_orders", "--json").stdout)
            if runs and runs[0]["state"] == "success":
                break
            time.sleep(0.2)
        assert runs and runs[0]["state"] == "success", runs
        assert time.monotonic() - posted < 20  # well inside the 600 s poll
