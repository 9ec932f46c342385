"""A try's processes, with a real worker and real task children, on both backends: a
task that forks cannot speak for another try, what a try leaves running ends with it,
tasks do not inherit the orchestrator's secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest

from orchestrator.engine.processor import DagProcessor
from tests.helpers import Harness


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] not in (b"Z", b"X")


def gone_soon(pid: int) -> bool:
    # SIGKILL is delivered at once, but a process can take a moment to exit
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not alive(pid)


def _run(harness: Harness, dag_id: str, conf: dict | None = None) -> str:
    run = harness.store.trigger_run(dag_id, harness.clock.now(), conf=conf or {})
    return harness.run_until_finished(run.run_id).run_id


def _result(store, run_id: str, task_id: str):
    state = store.task_instance(run_id, task_id).state
    result = store.results(run_id, [task_id]).get(task_id)
    return state, json.loads(result) if result else None


FORKING_DAGS = """
import os, sys, time
from orchestrator import DAG, task

with DAG("forks", schedule=None) as dag:
    @task
    def a(ctx):
        if os.fork() == 0:
            time.sleep(0.5)
            sys.exit(0)
        return "result-of-a"

with DAG("other", schedule=None) as other:
    @task
    def b(ctx):
        time.sleep(1.5)  # the forked copy of a wakes up while b runs
        return "result-of-b"
"""


def test_a_task_that_forks_cannot_speak_for_the_next_try(store, settings, clock, write_dag):
    write_dag("forks.py", FORKING_DAGS)
    harness = Harness(store, settings, clock, concurrency=1)
    try:
        assert harness.parse().errors == 0
        for _ in range(2):  # on the old code the second round swapped the results
            run_a = _run(harness, "forks")
            run_b = _run(harness, "other")
            harness.clock.advance(timedelta(minutes=1))
            assert _result(store, run_a, "a") == ("success", "result-of-a")
            assert _result(store, run_b, "b") == ("success", "result-of-b")
            assert store.task_instance(run_b, "b").error is None
    finally:
        harness.close()


FORGING_DAG = """
import os, json
from multiprocessing.connection import Connection
from orchestrator import DAG, task

def channel_fd():
    # the task process's channel to the worker, found the way a confused library might
    for fd in range(3, 256):
        try:
            os.fstat(fd)
        except OSError:
            continue
        if os.path.exists(f"/proc/self/fd/{fd}") and "socket:" in os.readlink(f"/proc/self/fd/{fd}"):
            return fd
    raise RuntimeError("no channel")

with DAG("forger", schedule=None, params={"form": "bare"}) as dag:
    @task
    def forge(ctx):
        fd = os.dup(channel_fd())  # a copy the fork hooks do not know about
        pid = os.fork()
        if pid == 0:
            message = {"ok": True, "result": json.dumps("forged")}
            if ctx.params["form"] == "tagged":
                message = (None, os.getpid(), message)
            Connection(fd).send(message)
            os._exit(0)
        os.waitpid(pid, 0)
        os.close(fd)
        return "genuine"

    @task
    def next_one(ctx):
        return "fine"
"""


@pytest.mark.parametrize("form", ["bare", "tagged"])
def test_a_message_from_another_process_fails_the_try_and_replaces_the_slot(
    store, settings, clock, write_dag, form
):
    write_dag("forger.py", FORGING_DAG)
    harness = Harness(store, settings, clock, concurrency=1)
    try:
        assert harness.parse().errors == 0
        run = store.trigger_run("forger", clock.now(), conf={"form": form})
        harness.tick()
        harness.worker.run_until_idle()
        ti = store.task_instance(run.run_id, "forge")
        assert ti.state == "failed"
        assert store.results(run.run_id, ["forge"]).get("forge") is None  # not "forged"
        assert "channel carried" in ti.error and "killed and replaced" in ti.error
        [try1] = store.tries(run.run_id, "forge")
        assert try1.state == "crashed"
        # the slot was replaced: the next try runs in a fresh task process and succeeds
        harness.run_until_finished(run.run_id)
        assert _result(store, run.run_id, "next_one") == ("success", "fine")
    finally:
        harness.close()


LEFTOVERS_DAG = """
import os, subprocess, time
from orchestrator import DAG, task

with DAG("leftovers", schedule=None, params={"folder": ""}) as dag:
    @task
    def python_leaves(ctx):
        folder = ctx.params["folder"]
        setsid = subprocess.Popen(["sleep", "300"], start_new_session=True)
        nohup = subprocess.Popen(["nohup", "sleep", "300"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        # a daemon: its parent exits, it lives on in a session of its own
        subprocess.run(["sh", "-c", f"sleep 300 & echo $! > {folder}/daemon"],
                       start_new_session=True, check=True)
        return [setsid.pid, nohup.pid, int(open(f"{folder}/daemon").read())]

    shell_leaves = dag.shell(
        "shell_leaves",
        "setsid sleep 300 > /dev/null 2>&1 & echo $! > {{ params.folder }}/shell_setsid; "
        "nohup sleep 300 > /dev/null 2>&1 & echo $! > {{ params.folder }}/shell_nohup; "
        # holds the output pipe open after the shell exits: the try still ends
        "sleep 300 & echo $! > {{ params.folder }}/shell_holds_output",
    )

    @task(timeout=1)
    def times_out(ctx):
        sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
        with open(f"{ctx.params['folder']}/timeout_child", "w") as f:
            f.write(str(sleeper.pid))
        time.sleep(300)
"""


def test_processes_a_try_leaves_running_end_with_the_try(harness, write_dag, tmp_path, store):
    write_dag("leftovers.py", LEFTOVERS_DAG)
    assert harness.parse().errors == 0
    run = store.trigger_run("leftovers", harness.clock.now(), conf={"folder": str(tmp_path)})
    harness.tick()
    harness.worker.run_until_idle()
    state, pids = _result(store, run.run_id, "python_leaves")
    assert state == "success" and len(pids) == 3
    pids += [
        int((tmp_path / name).read_text())
        for name in ("shell_setsid", "shell_nohup", "shell_holds_output")
    ]
    assert store.task_instance(run.run_id, "shell_leaves").state == "success"
    # gone when the outcome is recorded (at most a moment for the kernel to finish them)
    assert [p for p in pids if not gone_soon(p)] == []
    timeout_child = int((tmp_path / "timeout_child").read_text())
    assert store.task_instance(run.run_id, "times_out").state == "failed"
    assert gone_soon(timeout_child), "the timed-out try's setsid child outlived it"
    log = (
        tmp_path / "state" / "logs" / store.tries(run.run_id, "python_leaves")[0].log_path
    ).read_text()
    assert "ended 3 process(es) the try left running" in log


SECRETS_DAG = """
import os
from orchestrator import DAG, task

# what the DAG file saw when it was imported (parsing runs user code too)
SEEN = ",".join(sorted(k for k in os.environ if k.startswith("ORCHESTRATOR_"))) or "none"

with DAG("secrets", schedule=None, params={"out": ""}, description=SEEN) as dag:
    @task
    def python_env(ctx):
        return sorted(k for k in os.environ if k.startswith(("ORCHESTRATOR_", "APP_", "DB_")))

    @task
    def proc_environ(ctx):
        # /proc/<pid>/environ: this process's, its forkserver's and its worker's starting
        # environments (readable by any process of the same user)
        def block(pid):
            with open(f"/proc/{pid}/environ", "rb") as fh:
                return fh.read()
        parent = os.getppid()
        with open(f"/proc/{parent}/stat", "rb") as fh:
            stat = fh.read()
        worker = int(stat[stat.rindex(b")") + 2 :].split()[1])
        return {which: block(pid).decode(errors="replace")
                for which, pid in (("self", "self"), ("forkserver", parent), ("worker", worker))}

    shell_env = dag.shell(
        "shell_env",
        "env | grep -E '^(ORCHESTRATOR_|APP_|GIVEN)' | cut -d= -f1 | sort > {{ params.out }}",
        env={"GIVEN": "by the task"},
    )
"""


# a fresh interpreter, so its worker's forkserver (and the task processes it forks)
# starts from the environment given here
WORKER_SCRIPT = """
import sys
from datetime import UTC, datetime
from orchestrator.clock import FakeClock
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.engine.processor import DagProcessor
from tests.helpers import Harness

settings = Settings.load()
store = Store(settings.database_url)
harness = Harness(store, settings, FakeClock(datetime(2026, 1, 1, tzinfo=UTC)))
try:
    assert harness.parse().errors == 0
    run = store.trigger_run("secrets", harness.clock.now(), conf={"out": sys.argv[1]})
    print(harness.run_until_finished(run.run_id).run_id)
finally:
    harness.close()
    store.dispose()
"""


def _run_in_worker_process(settings, out, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    environ.update(
        ORCHESTRATOR_DATABASE_URL=settings.database_url,
        ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
        ORCHESTRATOR_STATE_DIR=settings.state_dir,
        ORCHESTRATOR_METRICS_TOKEN="s3cret",
        APP_MODE="prod",
        APP_SECRET="x",
        **env,
    )
    proc = subprocess.run(
        [sys.executable, "-c", WORKER_SCRIPT, str(out)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-1]


def test_by_default_only_the_allow_list_reaches_a_task(store, settings, write_dag, tmp_path):
    write_dag("secrets.py", SECRETS_DAG)
    out = tmp_path / "shell_env.txt"
    run_id = _run_in_worker_process(settings, out)
    # neither the database URL nor the metrics token (nor any other ORCHESTRATOR_*), nor
    # the worker's other variables (APP_*): only what task_env_allow names
    assert _result(store, run_id, "python_env") == ("success", [])
    assert store.get_dag("secrets").description == "none"  # nor does a DAG file's import
    # the try's own variables are set by the runner after the filter
    assert out.read_text().split() == [
        "GIVEN",
        "ORCHESTRATOR_DAG_ID",
        "ORCHESTRATOR_IDEMPOTENCY_KEY",
        "ORCHESTRATOR_MAP_INDEX",  # -1: not a mapped task (issue 14)
        "ORCHESTRATOR_RUN_ID",
        "ORCHESTRATOR_TASK_ID",
        "ORCHESTRATOR_TRY_NUMBER",
    ]


def test_the_inherited_environment_follows_the_allow_extra_and_deny_settings(
    store, settings, write_dag, tmp_path
):
    write_dag("secrets.py", SECRETS_DAG)
    run_id = _run_in_worker_process(
        settings,
        tmp_path / "shell_env.txt",
        ORCHESTRATOR_TASK_ENV_DENY="ORCHESTRATOR_*,*_SECRET",
        # APP_* loses to the more specific *_SECRET; ORCHESTRATOR_REGION beats ORCHESTRATOR_*
        ORCHESTRATOR_TASK_ENV_EXTRA="APP_*,ORCHESTRATOR_REGION",
        ORCHESTRATOR_REGION="eu-west-1",
    )
    assert _result(store, run_id, "python_env") == ("success", ["APP_MODE", "ORCHESTRATOR_REGION"])
    assert store.get_dag("secrets").description == "ORCHESTRATOR_REGION"


def test_the_settings_secrets_never_reach_a_task_even_when_allowed(
    store, settings, write_dag, tmp_path
):
    """Allowing everything still withholds the database URL and the metrics token, by
    name and by value (a copy under another name)."""
    write_dag("secrets.py", SECRETS_DAG)
    run_id = _run_in_worker_process(
        settings,
        tmp_path / "shell_env.txt",
        ORCHESTRATOR_TASK_ENV_ALLOW="*",
        ORCHESTRATOR_TASK_ENV_DENY="",
        DB_COPY=settings.database_url,
        DB_TOKEN_COPY="s3cret",  # the metrics token's value
        DB_OTHER="kept",
    )
    state, names = _result(store, run_id, "python_env")
    assert state == "success"
    assert "ORCHESTRATOR_DATABASE_URL" not in names
    assert "ORCHESTRATOR_METRICS_TOKEN" not in names
    assert "DB_COPY" not in names and "DB_TOKEN_COPY" not in names
    assert {"APP_MODE", "APP_SECRET", "DB_OTHER", "ORCHESTRATOR_STATE_DIR"} <= set(names)


def test_no_process_a_task_can_read_shows_the_secrets_in_its_starting_environment(
    store, settings, write_dag, tmp_path
):
    """/proc/<pid>/environ shows a process's starting environment whatever it did to
    os.environ since: neither the task's own, nor its forkserver's, nor its worker's
    holds the database URL or the metrics token (the worker still runs on them)."""
    write_dag("secrets.py", SECRETS_DAG)
    run_id = _run_in_worker_process(settings, tmp_path / "shell_env.txt")
    state, blocks = _result(store, run_id, "proc_environ")
    assert state == "success"
    for which in ("self", "forkserver", "worker"):
        text = blocks[which]
        assert "ORCHESTRATOR_DATABASE_URL" not in text and settings.database_url not in text
        assert "s3cret" not in text and "ORCHESTRATOR_METRICS_TOKEN" not in text, which


def _dag_file(dag_id: str) -> str:
    return (
        "from orchestrator import DAG, task\n"
        f"with DAG({dag_id!r}, schedule=None) as dag:\n"
        "    @task\n"
        "    def t(ctx):\n"
        "        return 1\n"
    )


def test_a_dag_file_that_forks_cannot_answer_for_the_next_file(store, settings, clock, dags_dir):
    # one parse child imports every file in turn; the copy a file forks must not send
    # a payload (it would be taken for the next file's) nor take the next file's path
    processor = DagProcessor(store, settings, parallelism=1)
    (dags_dir / "a_forks.py").write_text("import os\nos.fork()\n" + _dag_file("a_forks"))
    for n in range(4):
        (dags_dir / f"b{n}.py").write_text(_dag_file(f"b{n}"))
    result = processor.scan(clock.now())
    assert (result.dags, result.errors) == (5, 0)
    assert sorted(d.dag_id for d in store.list_dags()) == ["a_forks", "b0", "b1", "b2", "b3"]


FORK_WHILE_WRITING = """
import os, subprocess, sys
from orchestrator import DAG, task

with DAG("fork_while_writing", schedule=None) as dag:

    @task(timeout=60)
    def churn(ctx):
        # a subprocess floods fd 1 (read by the capture thread) while this process forks
        # and its copies print: a copy must never wait on a lock the thread held
        flood = subprocess.Popen(["sh", "-c", "yes flood | head -c 3000000"])
        done = 0
        for i in range(40):
            pid = os.fork()
            if pid == 0:
                print("copy", i, "prints")
                sys.stdout.flush()
                os._exit(0)
            os.waitpid(pid, 0)
            done += 1
        flood.wait()
        return done
"""


def test_a_task_that_forks_while_its_subprocess_floods_its_output_does_not_hang(
    harness, write_dag, store, settings
):
    write_dag("fork_while_writing.py", FORK_WHILE_WRITING)
    assert harness.parse().errors == 0
    run_id = _run(harness, "fork_while_writing")
    assert _result(store, run_id, "churn") == ("success", 40)
    [try_] = store.tries(run_id, "churn")
    log = settings.log_dir and os.path.join(settings.log_dir, try_.log_path)
    with open(log, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    assert "copy 39 prints" in text and "flood" in text  # both kinds of output kept
