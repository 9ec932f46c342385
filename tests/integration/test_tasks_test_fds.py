"""Issue 24 item 4: `orchestrator tasks test` masked only Python-level prints;
os.write(1/2), a subprocess's output and one-character writes printed secrets in
plaintext. It now captures at the file-descriptor level, as a real try does. A real
`orchestrator tasks test` process with its output on pipes, on both backends."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from orchestrator.store.credentials.secret_box import box_of
from tests.conftest import START  # noqa: I001

TOKEN = "tok-5e3c9a7b1d2f"

DAG = """
import os, subprocess, sys
from orchestrator import DAG, task

with DAG("leaky", schedule=None) as dag:
    @task
    def leak(ctx):
        t = ctx.variable("api_token")
        os.write(1, ("fd1 " + t + "\\n").encode())
        os.write(2, ("fd2 " + t + "\\n").encode())
        subprocess.run(["echo", "child " + t], check=True)
        subprocess.run(["sh", "-c", "echo child-err " + t + " >&2"], check=True)
        sys.stdout.write("chars ")
        for ch in t:
            sys.stdout.write(ch)
            sys.stdout.flush()
        print()
        for ch in t:
            os.write(1, ch.encode())
        os.write(1, b"\\n")
        print("printed", t)
        return "done"
"""


@pytest.fixture
def env(settings, store, dags_dir):
    store.set_variable("api_token", TOKEN, START, box_of(settings))
    (dags_dir / "leaky.py").write_text(DAG)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    environ.update(
        ORCHESTRATOR_DATABASE_URL=settings.database_url,
        ORCHESTRATOR_STATE_DIR=settings.state_dir,
        ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
    )
    return environ


def test_tasks_test_masks_fd_writes_subprocesses_and_one_char_writes(env):
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "tasks", "test", "leaky", "leak"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    assert TOKEN not in shown, shown
    for line in ("fd1 ***", "fd2 ***", "child ***", "child-err ***", "chars ***",
                 "printed ***"):  # fmt: skip
        assert line in shown, (line, shown)
    assert '"done"' in done.stdout  # the result still reaches standard output
    # nothing of the secret's characters leaked one at a time either
    assert TOKEN[:6] not in shown


def test_after_a_task_test_the_process_writes_to_its_own_fds_again(env, capfd, monkeypatch):
    """In process (the CLI's main): fds 1 and 2 are put back afterwards."""
    from orchestrator.cli import main

    for key, value in env.items():
        if key.startswith("ORCHESTRATOR_"):
            monkeypatch.setenv(key, value)
    assert main(["tasks", "test", "leaky", "leak"]) == 0
    os.write(1, b"after the test\n")
    out, err = capfd.readouterr()
    assert TOKEN not in out + err
    assert "fd1 ***" in out + err and out.endswith("after the test\n")
