"""Try logs with real task processes, on both backends: capped with a marker, printed by
``tasks logs`` in constant memory, control characters escaped on a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Harness

NOISY_DAG = r"""
from orchestrator import DAG, task

with DAG("noisy", schedule=None) as dag:
    @task
    def chatty(ctx):
        ctx.log.info("before the flood")
        for i in range(40_000):
            print(f"line {i:06d} " + "x" * 90)
        return "done"

    shell_flood = dag.shell("shell_flood", "yes 0123456789abcdef | head -c 4000000")

    @task
    def hostile(ctx):
        print("title \x1b]0;pwned\x07 colour \x1b[31mred\x1b[0m nul \x00 cr \r bell \x07 end")
"""


def _finish(harness: Harness, dag_id: str) -> str:
    assert harness.parse().errors == 0
    run = harness.store.trigger_run(dag_id, harness.clock.now())
    return harness.run_until_finished(run.run_id).run_id


def _log_file(store, settings, run_id: str, task_id: str) -> Path:
    [one] = store.tries(run_id, task_id)
    return Path(settings.log_dir) / one.log_path


def test_a_huge_try_log_is_capped_with_a_visible_marker(store, settings, clock, write_dag):
    write_dag("noisy.py", NOISY_DAG)
    cap = 256 * 1024
    harness = Harness(store, settings.with_(max_log_bytes=cap), clock)
    try:
        run_id = _finish(harness, "noisy")
    finally:
        harness.close()
    for task_id, last in (("chatty", "succeeded"), ("shell_flood", "command succeeded")):
        assert store.task_instance(run_id, task_id).state == "success"
        path = _log_file(store, settings, run_id, task_id)
        size = path.stat().st_size
        assert cap <= size < cap + 4096, (task_id, size)  # about 4 MB were written
        text = path.read_text()
        assert "[orchestrator: log truncated: this try wrote more than 262144 bytes" in text
        assert "bytes of output were dropped (max_log_bytes=262144)]" in text
        # the start is kept, and the runner's closing line is always written
        assert "INFO starting dag_id=noisy" in text.splitlines()[0]
        assert text.splitlines()[-1].endswith(f"INFO {last}")
    assert "before the flood" in _log_file(store, settings, run_id, "chatty").read_text()


def _cli_env(settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(
        ORCHESTRATOR_DATABASE_URL=settings.database_url,
        ORCHESTRATOR_STATE_DIR=settings.state_dir,
        ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
    )
    return env


def _logs_on_a_terminal(settings, *argv: str) -> bytes:
    """``orchestrator tasks logs ...`` with its output on a pseudo-terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "tasks", "logs", *argv],
        stdout=slave,
        stderr=subprocess.PIPE,
        env=_cli_env(settings),
    )
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other end is closed
            break
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(60) == 0, proc.stderr.read()
    proc.stderr.close()
    return out


def test_control_characters_are_escaped_on_a_terminal_unless_raw(
    harness, settings, write_dag, store
):
    write_dag("noisy.py", NOISY_DAG)
    run_id = _finish(harness, "noisy")
    out = _logs_on_a_terminal(settings, run_id, "hostile")
    assert b"\x1b" not in out and b"\x00" not in out and b"\x07" not in out
    assert (
        rb"title \x1b]0;pwned\x07 colour \x1b[31mred\x1b[0m nul \x00 cr \x0d bell \x07 end" in out
    )
    raw = _logs_on_a_terminal(settings, run_id, "hostile", "--raw")
    assert b"\x1b]0;pwned\x07" in raw and b"\x00" in raw


def _max_rss_kib(settings, *argv: str, stdout=subprocess.DEVNULL) -> tuple[int, bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "tasks", "logs", *argv],
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        env=_cli_env(settings),
    )
    out = proc.stdout.read() if proc.stdout else b""
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stdout:
        proc.stdout.close()
    assert proc.returncode == 0
    return usage.ru_maxrss, out


def test_tasks_logs_streams_a_huge_log_in_constant_memory(harness, settings, write_dag, store):
    write_dag("noisy.py", NOISY_DAG)
    run_id = _finish(harness, "noisy")
    baseline, _ = _max_rss_kib(settings, run_id, "hostile")
    # a 96 MB log, as a worker without a cap (or an old one) left it
    path = _log_file(store, settings, run_id, "chatty")
    line = b"y" * 1023 + b"\n"
    with path.open("wb") as f:
        for _ in range(96):
            f.write(line * 1024)
        f.write(b"second to last\nthe last line\n")
    # reading it whole would take at least its 96 MB (twice, decoded); streaming, a chunk
    slack = 24 * 1024
    whole, _ = _max_rss_kib(settings, run_id, "chatty")
    assert whole < baseline + slack, (baseline, whole)
    tail, out = _max_rss_kib(settings, run_id, "chatty", "--tail", "2", stdout=subprocess.PIPE)
    assert out == b"second to last\nthe last line\n"
    assert tail < baseline + slack, (baseline, tail)


HOSTILE_BYTES = (b"\x1b", b"\x00", b"\x07", b"\r", b"\x9b", "\u009d".encode(), "\u202e".encode())


@pytest.mark.parametrize(
    "extra", [(), ("--tail", "2"), ("--follow",), ("--try", "1"), ("--tail", "2", "--follow")]
)
@pytest.mark.parametrize("from_store", [False, True])
def test_every_way_of_printing_a_log_escapes_on_a_terminal(
    harness, settings, write_dag, store, extra, from_store
):
    """Issue 24 item 14: the tail, --follow, a chosen try and a log read from the store
    (the try ran on another machine) are escaped on a terminal too."""
    write_dag("noisy.py", NOISY_DAG)
    run_id = _finish(harness, "noisy")
    if from_store:
        _log_file(store, settings, run_id, "hostile").unlink()
    out = _logs_on_a_terminal(settings, run_id, "hostile", *extra)
    assert b"title " in out and b"end" in out
    for bad in HOSTILE_BYTES:
        assert bad not in out.replace(b"\r\n", b"\n"), (bad, out[-300:])
