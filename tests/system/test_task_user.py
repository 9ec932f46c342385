"""Tasks run as another OS user (issue 24, item 1), with real processes, as root.

The test makes its own unprivileged user (useradd; removed after), runs `orchestrator
standalone` with ``task_user`` set, and has a Python and a shell task walk /proc up
through their parents and try to read the state folder's keys (``secrets_key``,
``webui_secret``), the database file and each parent's /proc/<pid>/environ and fd:
every read fails, each task records that and succeeds. On main (no task_user: tasks
ran as the orchestrator's user) the same tasks read them all. Also: a root worker or
standalone without a task user refuses to start; a DAG-folder symlink to the web
secret becomes an import error that does not quote it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.system.cluster import free_port
from tests.system.test_descendant_environ import started

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root"),
]

PROBE = '''
import json, os
from orchestrator import DAG, task

STATE = {state!r}


def ancestors():
    """(pid, uid) of every parent up to init, by /proc/<pid>/stat."""
    found, pid = [], os.getpid()
    while pid > 1:
        with open(f"/proc/{{pid}}/stat") as f:
            stat = f.read()
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if pid > 1:
            found.append((pid, os.stat(f"/proc/{{pid}}").st_uid))
    return found


def attempt(what, read):
    try:
        read()
        return "READ"
    except PermissionError:
        return "denied"
    except OSError as exc:
        return f"other {{type(exc).__name__}}"


with DAG("probe", schedule=None) as dag:
    @task
    def py(ctx):
        me = os.getuid()
        out = {{"uid": me, "home": os.environ.get("HOME"), "files": {{}}, "procs": {{}}}}
        for name in ("secrets_key", "webui_secret", "orchestrator.db"):
            out["files"][name] = attempt(name, lambda: open(os.path.join(STATE, name), "rb").read())
        out["own"] = {{}}  # the parents of the task's own user
        for pid, uid in ancestors():
            where = out["own"] if uid == me else out["procs"]
            where[f"{{pid}} environ"] = attempt(pid, lambda: open(f"/proc/{{pid}}/environ", "rb").read())
            where[f"{{pid}} fd"] = attempt(pid, lambda: os.listdir(f"/proc/{{pid}}/fd"))
        print("PROBE " + json.dumps(out))

    sh = dag.shell("sh", """
me=$(id -u)
echo "uid $me"
for f in secrets_key webui_secret orchestrator.db; do
  if cat "{state}/$f" >/dev/null 2>&1; then echo "READ $f"; else echo "denied $f"; fi
done
pid=$$
while [ "$pid" -gt 1 ]; do
  pid=$(sed 's/.*) //' /proc/$pid/stat | cut -d' ' -f2)
  [ "$pid" -gt 1 ] || break
  owner=$(stat -c %u /proc/$pid)
  [ "$owner" = "$me" ] && continue
  if cat /proc/$pid/environ >/dev/null 2>&1; then echo "READ environ $pid"; else echo "denied environ $pid"; fi
  if ls /proc/$pid/fd >/dev/null 2>&1; then echo "READ fd $pid"; else echo "denied fd $pid"; fi
done
""")
    py >> sh
'''


@pytest.fixture
def task_user() -> Iterator[pwd.struct_passwd]:
    name = f"orchtask{uuid.uuid4().hex[:6]}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", name],
                   check=True)  # fmt: skip
    try:
        yield pwd.getpwnam(name)
    finally:  # -f: a task process of the user may still be exiting
        for _ in range(20):
            if subprocess.run(["userdel", "-f", name], check=False).returncode in (0, 6):
                break
            time.sleep(0.5)


probe_pids: list[int] = []  # the pid of the last standalone _run_probe started


@pytest.fixture(autouse=True)
def interpreter_reachable() -> Iterator[None]:
    """The task user runs this interpreter's modules: a folder above it that others may
    not enter (a pyenv under /root, 0700) gets o+x (enter, not list) for the test."""
    changed = []
    for folder in [*Path(sys.prefix).resolve().parents][::-1]:
        mode = folder.stat().st_mode
        if not mode & 0o001:
            folder.chmod(mode | 0o001)
            changed.append((folder, mode))
    try:
        yield
    finally:
        for folder, mode in reversed(changed):
            folder.chmod(mode)


@pytest.fixture
def project() -> Iterator[Path]:
    """A project folder the task user can read (pytest's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="orch-iso-", dir="/tmp"))
    folder.chmod(0o755)
    (folder / "dags").mkdir(mode=0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cli(cwd: Path, env: dict[str, str], *argv: str, **popen: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False,
                          **popen)  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, ORCHESTRATOR_WEB_PORT=str(free_port()))
    env.pop("ORCHESTRATOR_DATABASE_URL", None)
    env.pop("ORCHESTRATOR_ALLOW_ROOT_TASKS", None)  # tests/conftest.py sets it for the suite
    return env | extra


def _output_lines(log: str) -> set[str]:
    """The lines the shell task printed (not the command the log shows first)."""
    return {line.strip() for line in log.splitlines() if not line.startswith("20")}


def _run_probe(project: Path, env: dict[str, str], **popen: Any) -> tuple[dict, str, set]:
    """(the Python task's findings, the shell task's log, {(uid, mode)} of the logs);
    ``popen``: how to start standalone (as another user)."""
    state = project / ".orchestrator"
    (project / "dags" / "probe.py").write_text(textwrap.dedent(PROBE.format(state=str(state))))
    (project / "dags" / "probe.py").chmod(0o644)
    with started(project, env, "standalone", **popen) as proc:
        probe_pids.append(proc.pid)
        deadline = time.monotonic() + 120
        while "probe" not in _cli(project, env, "dags", "list", **popen).stdout:
            assert proc.poll() is None, (project / "standalone.log").read_text()[-3000:]
            assert time.monotonic() < deadline, _cli(project, env, "dags", "errors", **popen).stdout
            time.sleep(0.5)
        assert _cli(project, env, "dags", "trigger", "probe", **popen).returncode == 0
        run = None
        while run is None or run["state"] not in ("success", "failed"):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.5)
            runs = json.loads(
                _cli(project, env, "runs", "list", "probe", "--json", **popen).stdout or "[]"
            )
            run = runs[0] if runs else None
        py = _cli(project, env, "tasks", "logs", run["run_id"], "py", **popen).stdout
        sh = _cli(project, env, "tasks", "logs", run["run_id"], "sh", **popen).stdout
        logs = sorted(state.rglob("*.log"))
        owners = {(os.stat(p).st_uid, oct(os.stat(p).st_mode & 0o777)) for p in logs}
    assert run["state"] == "success", (project / "standalone.log").read_text()[-3000:] + py + sh
    probe = json.loads(py.split("PROBE ", 1)[1].splitlines()[0])
    return probe, sh, owners


def test_a_task_user_cannot_read_the_keys_the_database_or_the_workers_proc(
    project: Path, task_user: pwd.struct_passwd
) -> None:
    probe, sh, owners = _run_probe(project, _env(ORCHESTRATOR_TASK_USER=task_user.pw_name))
    assert probe["uid"] == task_user.pw_uid
    assert probe["files"] == dict.fromkeys(("secrets_key", "webui_secret", "orchestrator.db"),
                                           "denied")  # fmt: skip
    assert len(probe["procs"]) >= 4  # the forkserver and standalone: environ and fd each
    assert set(probe["procs"].values()) == {"denied"}, probe["procs"]
    lines = _output_lines(sh)
    assert f"uid {task_user.pw_uid}" in lines
    assert {"denied secrets_key", "denied webui_secret", "denied orchestrator.db"} <= lines
    assert any(line.startswith("denied environ ") for line in lines)
    assert any(line.startswith("denied fd ") for line in lines)
    assert not [line for line in lines if line.startswith("READ")]
    assert owners == {(0, "0o600")}  # the worker opened the logs: root's, 0600


def test_without_a_task_user_root_refuses_to_run_tasks(project: Path) -> None:
    env = _env()
    for command in (["standalone"], ["worker"]):
        out = _cli(project, env, *command)
        assert out.returncode == 1, out
        assert "runs as root and task_user is not set" in out.stderr
        assert "--allow-root-tasks" in out.stderr
    assert not (project / ".orchestrator" / "orchestrator.db").exists()  # nothing started


def test_allow_root_tasks_runs_them_as_root_and_they_read_everything(project: Path) -> None:
    """What main did for every task: the reason a task user exists."""
    probe, sh, _ = _run_probe(project, _env(ORCHESTRATOR_ALLOW_ROOT_TASKS="1"))
    assert probe["uid"] == 0
    assert set(probe["files"].values()) == {"READ"}
    assert "READ secrets_key" in _output_lines(sh)


def test_a_symlink_out_of_the_dags_folder_is_not_followed(project: Path) -> None:
    env = _env(ORCHESTRATOR_ALLOW_ROOT_TASKS="1")
    assert _cli(project, env, "db", "upgrade").returncode == 0
    secret = project / "webui-secret-file"
    secret.write_text("0123456789abcdef-the-secret-line\n")
    (project / "dags" / "evil.py").symlink_to(secret)
    with started(project, env, "scheduler") as proc:
        deadline = time.monotonic() + 60
        errors = ""
        while "evil.py" not in errors:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.5)
            errors = _cli(project, env, "dags", "errors").stdout
    assert "symlink that leads out of the dags folder is not followed" in errors
    assert "the-secret-line" not in errors
    with contextlib.suppress(FileNotFoundError):
        assert "the-secret-line" not in (project / "scheduler.log").read_text()


PER_TASK = """
import os
from orchestrator import DAG, task

with DAG("per_task", schedule=None) as dag:
    @task(run_as_user={user!r})
    def as_user(ctx):
        print("UID", os.getuid(), os.getgroups())

    @task
    def as_worker(ctx):
        print("UID", os.getuid())

    as_user >> as_worker >> dag.shell("sh_user", "echo UID $(id -u)", run_as_user={user!r})
"""


def test_run_as_user_picks_the_user_of_one_task(project: Path, task_user) -> None:
    """Airflow's per-task ``run_as_user=``: that task's process runs as the user, the
    others as the worker's (here root, allowed); both kinds share the slots."""
    env = _env(ORCHESTRATOR_ALLOW_ROOT_TASKS="1", ORCHESTRATOR_WORKER_CONCURRENCY="1")
    (project / "dags" / "per_task.py").write_text(PER_TASK.format(user=task_user.pw_name))
    (project / "dags" / "per_task.py").chmod(0o644)
    with started(project, env, "standalone") as proc:
        deadline = time.monotonic() + 120
        while "per_task" not in _cli(project, env, "dags", "list").stdout:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.5)
        assert _cli(project, env, "dags", "trigger", "per_task").returncode == 0
        run = None
        while run is None or run["state"] not in ("success", "failed"):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.5)
            runs = json.loads(_cli(project, env, "runs", "list", "per_task", "--json").stdout)
            run = runs[0] if runs else None
        logs = {
            t: _cli(project, env, "tasks", "logs", run["run_id"], t).stdout
            for t in ("as_user", "as_worker", "sh_user")
        }
    assert run["state"] == "success", logs
    assert f"UID {task_user.pw_uid} []" in logs["as_user"]  # no supplementary groups
    assert "UID 0" in logs["as_worker"]
    assert f"UID {task_user.pw_uid}" in _output_lines(logs["sh_user"])


def test_without_a_task_user_the_workers_proc_is_still_closed(project: Path, task_user) -> None:
    """standalone run by an unprivileged user, no task user: its tasks run as that same
    user and read the state folder (the table in docs/secrets.md says so), but not
    /proc/<standalone pid>/environ or fd: the process is not dumpable (on main both
    were readable by the task)."""
    subprocess.run(["chown", "-R", f"{task_user.pw_uid}:{task_user.pw_gid}", str(project)],
                   check=True)  # fmt: skip
    as_user = {"user": task_user.pw_uid, "group": task_user.pw_gid, "extra_groups": []}
    env = _env(HOME=str(project))
    probe, sh, _ = _run_probe(project, env, **as_user)
    me = probe_pids[-1]
    assert probe["uid"] == task_user.pw_uid
    assert set(probe["files"].values()) == {"READ"}  # same user: the documented limit
    assert probe["own"][f"{me} environ"] == "denied", probe["own"]
    assert probe["own"][f"{me} fd"] == "denied", probe["own"]
