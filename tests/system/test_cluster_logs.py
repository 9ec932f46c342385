"""Logs from any machine (issue 17 item 1), for real: PostgreSQL, two workers with state
folders of their own and a web server with a third. Every try's log is read from the web
server while the try runs and after its worker was SIGKILLed and its folder deleted."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import urllib.error
import urllib.request

import pytest

from tests.system.cluster import cluster, pid_of, wait_for
from tests.system.test_cluster import FAST, pg_settings, pg_store  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.system, pytest.mark.postgres]

QUICK = 4

LOGS_DAG = f"""
import os, time
from orchestrator import DAG, task

with DAG("fleet_logs", schedule=None) as dag:
    @task
    def slow(ctx):
        print("live-start: slow is running", flush=True)
        parent = os.getppid()
        for _ in range(1200):  # until the test is done with it, or its worker is gone
            if os.getppid() != parent:
                return None
            time.sleep(0.05)
        print("live-end")

    def quick(ctx):
        for i in range(200):
            print(f"{{ctx.task_id}} line {{i:03d}}")
        ctx.log.info("quick %s done", ctx.task_id)

    for i in range({QUICK}):
        task(task_id=f"quick_{{i}}")(quick)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


def test_every_try_log_is_readable_from_the_web_server_also_after_its_worker_is_gone(
    pg_settings,  # noqa: F811
    pg_store,  # noqa: F811
    write_dag,
    tmp_path,
):
    write_dag("fleet_logs.py", LOGS_DAG)
    port = _free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    folders = {name: tmp_path / f"state-{name}" for name in ("w1", "w2", "web", "sched")}
    with cluster(pg_settings, tmp_path, **FAST, ORCHESTRATOR_LOG_SHIP_SECONDS="0.5") as c:
        procs = {}
        for name, argv in (
            ("sched", ("scheduler",)),
            ("w1", ("worker", "--concurrency", "1")),
            ("w2", ("worker", "--concurrency", "1")),
            ("web", ("webserver", "--port", str(port))),
        ):
            c.env["ORCHESTRATOR_STATE_DIR"] = str(folders[name])
            procs[name] = c.start(*argv)
        wait_for(lambda: pg_store.list_dags(), "the DAG parsed", 60)
        run = pg_store.trigger_run("fleet_logs", pg_store_now())

        def log_of(task_id: str, try_number: int = 1) -> dict:
            return _get(f"{base}/runs/{run.run_id}/tasks/{task_id}/tries/{try_number}/log?offset=0")

        # live: the running try's log, from a web server that has no log folder of it
        def slow_live():
            try:
                body = log_of("slow")
            except OSError:
                return None
            return body if "live-start" in body["text"] else None

        live = wait_for(slow_live, "the running try's log on the web server", 60)
        assert live["source"] == "store" and live["finished"] is False
        quick_ids = [f"quick_{i}" for i in range(QUICK)]
        wait_for(
            lambda: all(
                pg_store.task_instance(run.run_id, t).state == "success" for t in quick_ids
            ),
            "the quick tasks",
            90,
        )
        [slow_try] = pg_store.tries(run.run_id, "slow")
        holder = next(n for n in ("w1", "w2") if procs[n].pid == pid_of(slow_try.worker))
        other = "w2" if holder == "w1" else "w1"
        workers_used = {pg_store.tries(run.run_id, t)[0].worker for t in quick_ids}
        workers_used.add(slow_try.worker)
        assert len(workers_used) == 2, workers_used  # both workers ran tries

        # the worker running `slow` is SIGKILLed mid-try and its machine's folder is gone
        c.kill(procs[holder], signal.SIGKILL)
        shutil.rmtree(folders[holder])
        after = log_of("slow")
        assert after["source"] == "store" and "live-start: slow is running" in after["text"]
        assert "live-end" not in after["text"]
        # the other worker too
        c.kill(procs[other], signal.SIGKILL)
        shutil.rmtree(folders[other])
        assert not (folders["web"] / "logs").exists()  # nothing shared, nothing copied
        for task_id in quick_ids:
            body = log_of(task_id)
            assert body["source"] == "store" and body["finished"] is True, task_id
            text = body["text"]
            assert f"{task_id} line 000" in text and f"{task_id} line 199" in text
            assert f"quick {task_id} done" in text and text.rstrip().endswith("succeeded")
        page = (
            urllib.request.urlopen(  # noqa: S310 - loopback
                f"http://127.0.0.1:{port}/runs/{run.run_id}/tasks/quick_0", timeout=10
            )
            .read()
            .decode()
        )
        assert "From the store, as worker" in page and "quick_0 line 199" in page
        # a try that never started: 404 with why
        with pytest.raises(urllib.error.HTTPError) as missing:
            log_of("quick_0", 5)
        assert missing.value.code == 404
        assert "has no try 5 (tries 1..1)" in json.loads(missing.value.read())["detail"]


def pg_store_now():
    from datetime import UTC, datetime

    return datetime.now(UTC)
