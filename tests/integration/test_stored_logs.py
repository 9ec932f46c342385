"""Try logs shipped to the store by the worker (issue 17 item 1), on both backends:
byte for byte, live while a try runs, kept when the worker is gone, read by the web UI,
the API and ``tasks logs`` without the log folder, and deleted by ``db clean``."""

from __future__ import annotations

import json
import shutil
import time
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select

from orchestrator.cli import main
from orchestrator.observability.retention import clean
from orchestrator.store.core import models as m
from orchestrator.store.observe.log_store import LogPiece, StoredLogFile
from tests.helpers import Harness
from webui import create_app
from webui.logs import read_try_log

DAG_TEXT = r"""
import os, time
from orchestrator import DAG, task

with DAG("talk", schedule=None) as dag:
    @task
    def say(ctx):
        ctx.log.info("héllo from say")
        for i in range(3000):
            print(f"line {i:05d} " + "y" * 60)

    @task
    def wait_for_go(ctx):
        print("ready and waiting", flush=True)
        go = os.environ.get("GO_FILE") or os.path.join(os.path.dirname(__file__), "go")
        for _ in range(6000):
            if os.path.exists(go):
                break
            time.sleep(0.01)
        print("went")

    shout = dag.shell("shout", "echo shouted; echo err >&2")
"""


def _pieces(store) -> int:
    with store.read() as conn:
        return conn.execute(select(func.count()).select_from(m.log_chunks)).scalar()


def _run(harness: Harness, dag_id: str = "talk") -> str:
    assert harness.parse().errors == 0
    run = harness.store.trigger_run(dag_id, harness.clock.now())
    return harness.run_until_finished(run.run_id).run_id


def test_every_finished_try_log_is_in_the_store_byte_for_byte(
    store, settings, clock, write_dag, dags_dir
):
    write_dag("talk.py", DAG_TEXT)
    (dags_dir / "go").write_text("")  # wait_for_go does not wait here
    harness = Harness(store, settings, clock)
    try:
        run_id = _run(harness)
    finally:
        harness.close()
    for task_id in ("say", "wait_for_go", "shout"):
        [t] = store.tries(run_id, task_id)
        local = (Path(settings.log_dir) / t.log_path).read_bytes()
        with StoredLogFile(store, t.ti_id, t.try_number) as f:
            assert f.read() == local, task_id
        assert len(local) > 0
    [say] = store.tries(run_id, "say")
    assert store.stored_log_size(say.ti_id, 1)[1] >= 1
    # a tail, and a read from an offset, give the same bytes as the file
    local = (Path(settings.log_dir) / say.log_path).read_bytes()
    tail = store.stored_log(say.ti_id, 1, None, limit=1000)
    assert tail.data == local[-1000:] and tail.start == len(local) - 1000
    part = store.stored_log(say.ti_id, 1, offset=5, limit=77)
    assert part.data == local[5:82]
    # hostile offsets are clamped, never an error
    assert store.stored_log(say.ti_id, 1, offset=-9, limit=3).data == local[:3]
    assert store.stored_log(say.ti_id, 1, offset=10**12).data == b""


def test_readers_use_the_store_when_the_log_folder_is_gone(
    store, settings, clock, write_dag, capsys, monkeypatch
):
    write_dag("talk.py", DAG_TEXT.replace("@task\n    def wait_for_go", "def _no"))
    harness = Harness(store, settings, clock)
    try:
        run_id = _run(harness)
    finally:
        harness.close()
    [t] = store.tries(run_id, "say")
    local = (Path(settings.log_dir) / t.log_path).read_text()
    assert read_try_log(store, settings.log_dir, t).source == "file"
    shutil.rmtree(settings.log_dir)  # the worker's machine is gone
    chunk = read_try_log(store, settings.log_dir, t, offset=0, limit=len(local) + 10)
    assert (chunk.source, chunk.missing, chunk.text) == ("store", False, local)
    # the API, as the page's log follower asks it
    app = create_app(settings, store, clock=clock)
    client = app.test_client()
    body = client.get(f"/api/v1/runs/{run_id}/tasks/say/tries/1/log?offset=0").get_json()
    assert body["source"] == "store" and body["text"].startswith(local[:2000])
    assert body["finished"] is True and body["next_offset"] == min(len(local.encode()), 65536)
    page = client.get(f"/runs/{run_id}/tasks/say").get_data(as_text=True)
    assert "From the store, as worker" in page and "line 02999" in page  # the tail
    # a try that never started: 404 saying why
    missing = client.get(f"/api/v1/runs/{run_id}/tasks/say/tries/2/log")
    assert missing.status_code == 404 and "no try 2 (tries 1..1)" in missing.get_json()["detail"]
    # the CLI
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    capsys.readouterr()
    assert main(["tasks", "logs", run_id, "say", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["log_source"] == "store" and out["log"] == local
    assert main(["tasks", "logs", run_id, "say", "--tail", "2"]) == 0
    assert capsys.readouterr().out == "".join(local.splitlines(keepends=True)[-2:])


def test_a_running_try_log_is_shipped_while_it_runs_and_kept_when_the_worker_dies(
    store, settings, clock, write_dag, dags_dir
):
    write_dag("talk.py", DAG_TEXT)
    harness = Harness(store, settings.with_(log_ship_seconds=0.01), clock)
    assert harness.parse().errors == 0
    run = store.trigger_run("talk", clock.now())
    t = None  # the try of wait_for_go once it started
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a real task process: bounded polling
        harness.tick()
        harness.worker.tick(clock.now(), wait_seconds=0.05)
        tries = store.tries(run.run_id, "wait_for_go")
        if tries and b"ready and waiting" in store.stored_log(tries[0].ti_id, 1).data:
            t = tries[0]
            break
    assert t is not None and t.end_date is None  # live: shipped while it runs
    # the worker dies with the try running (no outcome, nothing more shipped)
    harness.worker.close()
    shutil.rmtree(settings.log_dir)
    chunk = read_try_log(store, settings.log_dir, t)
    assert chunk.source == "store" and "ready and waiting" in chunk.text
    assert "went" not in chunk.text


def test_db_clean_deletes_the_shipped_logs_with_their_tries(
    store, settings, clock, write_dag, dags_dir
):
    write_dag("talk.py", DAG_TEXT)
    (dags_dir / "go").write_text("")
    harness = Harness(store, settings, clock)
    try:
        old = _run(harness)
        clock.advance(days=100)
        new = _run(harness)
    finally:
        harness.close()
    before = _pieces(store)
    assert before >= 6
    dry = clean(store, settings.log_dir, clock.now(), timedelta(days=90), dry_run=True)
    assert 3 <= dry["log_chunks"] < before and _pieces(store) == before
    done = clean(store, settings.log_dir, clock.now(), timedelta(days=90))
    assert done["log_chunks"] == dry["log_chunks"] and done["runs"] == 1
    assert _pieces(store) == before - done["log_chunks"]
    [kept] = store.tries(new, "say")
    assert store.stored_log_size(kept.ti_id, 1)[1] >= 1
    assert store.tries(old, "say") == []


def test_a_piece_shipped_twice_is_stored_once(store, clock):
    piece = LogPiece(ti_id=12345, try_number=1, seq=0, start_byte=0, data=b"once\n")
    assert store.ship_log([piece], clock.now()) == 1
    assert store.ship_log([piece], clock.now()) == 0  # a retried commit
    assert store.stored_log(12345, 1, 0).data == b"once\n"
    assert store.stored_log(12345, 2, 0).pieces == 0


NOISY = r"""
from orchestrator import DAG, task

with DAG("noisy", schedule=None) as dag:
    @task
    def flood(ctx):
        for i in range(20_000):
            print(f"line {i:06d} " + "x" * 90)
"""


def test_the_cap_applies_to_what_is_shipped(store, settings, clock, write_dag):
    write_dag("noisy.py", NOISY)
    cap = 64 * 1024
    harness = Harness(store, settings.with_(max_log_bytes=cap), clock)
    try:
        run_id = _run(harness, "noisy")
    finally:
        harness.close()
    [t] = store.tries(run_id, "flood")
    local = (Path(settings.log_dir) / t.log_path).read_bytes()
    size, _ = store.stored_log_size(t.ti_id, 1)
    assert size == len(local) < cap + 64 * 1024  # about 2 MB were written
    with StoredLogFile(store, t.ti_id, 1) as f:
        shipped = f.read()
    assert shipped == local and b"log truncated" in shipped


def test_follow_and_hostile_offsets_from_the_store(
    store, settings, clock, write_dag, capsys, monkeypatch
):
    write_dag("talk.py", DAG_TEXT.replace("@task\n    def wait_for_go", "def _no"))
    harness = Harness(store, settings, clock)
    try:
        run_id = _run(harness)
    finally:
        harness.close()
    [t] = store.tries(run_id, "shout")
    local = (Path(settings.log_dir) / t.log_path).read_text()
    shutil.rmtree(settings.log_dir)
    for name, value in (
        ("DATABASE_URL", settings.database_url),
        ("STATE_DIR", settings.state_dir),
        ("DAGS_FOLDER", settings.dags_folder),
    ):
        monkeypatch.setenv(f"ORCHESTRATOR_{name}", value)  # fmt: skip
    capsys.readouterr()
    assert main(["tasks", "logs", run_id, "shout", "--follow"]) == 0  # finished: prints, ends
    out = capsys.readouterr().out
    assert out == local and "shouted" in out and "err" in out
    client = create_app(settings, store, clock=clock).test_client()
    url = f"/api/v1/runs/{run_id}/tasks/shout/tries/1/log"
    assert client.get(url + "?offset=99999999").get_json()["text"] == ""
    bad = client.get(url + "?offset=abc")
    assert bad.status_code == 400 and "offset" in bad.get_json()["detail"]
