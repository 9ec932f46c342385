"""@task.virtualenv and @task.external_python on real interpreters and a real pip.

The virtual environments are built for real (from the package index pip is configured
with) into one folder per test session, so each distinct requirements set is built
once however many tests and backends use it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.engine.venv_cache import MARKER, ensure_venv, venv_key
from tests.helpers import Harness

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def venv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("venvs")


@pytest.fixture
def venv_harness(store, settings, clock, venv_cache):
    h = Harness(store, settings.with_(venv_cache_dir=str(venv_cache), venv_installer="pip"), clock)
    yield h
    h.close()


def _log(harness: Harness, run_id: str, task_id: str) -> str:
    [*_, last] = harness.store.tries(run_id, task_id)
    return (Path(harness.settings.log_dir) / last.log_path).read_text()


def _result(store, run_id: str, task_id: str):
    state = store.task_instance(run_id, task_id).state
    raw = store.results(run_id, [task_id]).get(task_id)
    return state, json.loads(raw) if raw else None


def _error(store, run_id: str, task_id: str) -> str:
    return store.tries(run_id, task_id)[-1].error or ""


PRETTY_DAG = """
from orchestrator import DAG, task

with DAG("pretty", schedule=None, params={"title": "rows"}) as dag:
    @task
    def load(ctx):
        return [[1, "a"], [2, "b"]]

    @task.virtualenv(requirements=["tabulate==0.10.0"], retries=0)
    def pretty(ctx):
        import importlib.util
        import sys

        import tabulate  # not installed beside the worker

        print("printed in the virtualenv")
        ctx.log.info("logged in the virtualenv, try %s", ctx.try_number)
        return {
            "table": tabulate.tabulate(ctx.upstream("load")),
            "version": tabulate.__version__,
            "orchestrator": importlib.util.find_spec("orchestrator") is not None,
            "prefix": sys.prefix,
            "isolated": sys.flags.isolated,
            "ids": [ctx.dag_id, ctx.task_id, ctx.try_number, ctx.params["title"]],
            "dates": [ctx.logical_date.isoformat(), ctx.ds],
            "type": type(ctx.logical_date).__name__,
        }

    @task.virtualenv(requirements=["tabulate==0.10.0"])
    def again():
        import tabulate

        return tabulate.__version__

    load >> pretty
"""


def test_a_virtualenv_task_runs_with_its_requirements_and_records_its_result(
    venv_harness, write_dag, venv_cache
):
    h = venv_harness
    # the worker itself has no tabulate: the point of the test
    assert subprocess.run([sys.executable, "-c", "import tabulate"], check=False).returncode != 0
    write_dag("pretty.py", PRETTY_DAG)
    assert h.parse().errors == 0
    run = h.store.trigger_run("pretty", h.clock.now())
    assert h.run_until_finished(run.run_id).state == "success"
    state, value = _result(h.store, run.run_id, "pretty")
    assert state == "success"
    assert value["table"].splitlines() == ["-  -", "1  a", "2  b", "-  -"]
    assert value["version"] == "0.10.0"
    assert value["orchestrator"] is False  # the orchestrator is not installed there
    assert value["isolated"] == 1
    assert value["prefix"].startswith(str(venv_cache))
    assert value["ids"] == ["pretty", "pretty", 1, "rows"]
    assert value["dates"][0] == run.logical_date.isoformat()
    assert value["type"] == "datetime"
    assert _result(h.store, run.run_id, "again") == ("success", "0.10.0")
    log = _log(h, run.run_id, "pretty")
    assert "printed in the virtualenv" in log
    assert "logged in the virtualenv, try 1" in log
    # one environment for the two tasks: built once, then reused
    key = venv_key(sys.executable, ["tabulate==0.10.0"], False)
    assert (venv_cache / key / MARKER).is_file()
    both = log + _log(h, run.run_id, "again")
    assert both.count(f"building virtual environment {key} with") <= 1
    assert f"virtual environment {key}" in both


def test_a_requirement_that_does_not_exist_fails_the_try_with_pips_error(
    venv_harness, write_dag, venv_cache
):
    h = venv_harness
    write_dag(
        "missing.py",
        """
        from orchestrator import DAG, task

        with DAG("missing", schedule=None) as dag:
            @task.virtualenv(requirements=["orchestrator-no-such-package-zz==9.9.9"])
            def never():
                return 1
        """,
    )
    assert h.parse().errors == 0
    run = h.store.trigger_run("missing", h.clock.now())
    assert h.run_until_finished(run.run_id).state == "failed"
    assert h.store.task_instance(run.run_id, "never").state == "failed"
    error = _error(h.store, run.run_id, "never")
    assert "building virtual environment" in error
    assert "pip install orchestrator-no-such-package-zz==9.9.9 exited with status 1:" in error
    assert "No matching distribution found for orchestrator-no-such-package-zz==9.9.9" in error
    assert "No matching distribution found" in _log(h, run.run_id, "never")
    # nothing half-built is left to be mistaken for a ready environment
    key = venv_key(sys.executable, ["orchestrator-no-such-package-zz==9.9.9"], False)
    assert not (venv_cache / key).exists()


def test_external_python_uses_an_existing_interpreter_and_a_missing_one_fails(
    venv_harness, write_dag
):
    h = venv_harness
    write_dag(
        "external.py",
        f"""
        from orchestrator import DAG, task
        from orchestrator.authoring.context import TaskContext

        with DAG("external", schedule=None, params={{"n": 20}}) as dag:
            @task.external_python(python={sys.executable!r})
            def annotated(ctx: TaskContext) -> list[TaskContext]:
                return [ctx.task_id]

            @task.external_python(python={sys.executable!r})
            def here(ctx):
                import sys

                return [sys.executable, sys.flags.isolated, ctx.params["n"] + 1]

            @task.external_python(python="/nonexistent/bin/python")
            def nowhere():
                return 1

            @task.external_python(python={sys.executable!r})
            def raises(ctx):
                raise ValueError("bad row " + str(ctx.params["n"]))

            @task.external_python(python={sys.executable!r})
            def not_json():
                return {{1, 2}}

            @task.external_python(python={sys.executable!r})
            def no_ctx_secrets(ctx):
                return ctx.variable("x")
        """,
    )
    assert h.parse().errors == 0
    run = h.store.trigger_run("external", h.clock.now())
    h.run_until_finished(run.run_id)
    assert _result(h.store, run.run_id, "here") == ("success", [sys.executable, 1, 21])
    # annotations naming what only the DAG file imports are never evaluated there
    assert _result(h.store, run.run_id, "annotated") == ("success", ["annotated"])
    assert h.store.task_instance(run.run_id, "nowhere").state == "failed"
    assert "/nonexistent/bin/python is not an executable file" in _error(
        h.store, run.run_id, "nowhere"
    )
    error = _error(h.store, run.run_id, "raises")
    assert error.startswith("ValueError: bad row 20")
    assert "external.py" in error  # the traceback names the DAG file and its line
    assert 'raise ValueError("bad row "' in error
    assert "not JSON-serialisable" in _error(h.store, run.run_id, "not_json")
    assert "ctx.variable is not available" in _error(h.store, run.run_id, "no_ctx_secrets")


def test_a_timed_out_virtualenv_task_is_killed_with_its_interpreter(
    venv_harness, write_dag, tmp_path
):
    h = venv_harness
    write_dag(
        "slow.py",
        f"""
        from orchestrator import DAG, task

        with DAG("slow", schedule=None, params={{"out": {str(tmp_path / "pid")!r}}}) as dag:
            @task.external_python(python={sys.executable!r}, timeout=1)
            def sleeps(ctx):
                import os, time

                with open(ctx.params["out"], "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(300)
        """,
    )
    assert h.parse().errors == 0
    run = h.store.trigger_run("slow", h.clock.now())
    h.tick()
    h.worker.run_until_idle()
    assert h.store.task_instance(run.run_id, "sleeps").state == "failed"
    pid = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not Path(f"/proc/{pid}").exists(), "the task's interpreter outlived its try"


BUILD_SCRIPT = """
import logging, subprocess, sys
from orchestrator.engine.venv_cache import ensure_venv

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")

def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr

print("python:", ensure_venv(sys.argv[1], sys.executable, [], False, installer="pip",
                             run=run, log=logging.getLogger("build")))
"""


def test_two_processes_building_one_environment_at_once_build_it_once(tmp_path):
    cache = tmp_path / "venvs"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD_SCRIPT, str(cache)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    key = venv_key(sys.executable, [], False)
    assert sum(o.count(f"building virtual environment {key}") for o in outs) == 1, outs
    assert sum(o.count(f"built virtual environment {key}") for o in outs) == 1, outs
    pythons = {line for o in outs for line in o.splitlines() if line.startswith("python:")}
    assert pythons == {f"python: {cache / key / 'bin' / 'python'}"}
    assert (cache / key / MARKER).is_file()


def test_an_unfinished_build_is_removed_and_built_again(tmp_path):
    """A build killed half-way leaves a folder without its marker: the next build starts
    over (here with a stand-in installer that records what it is asked to run)."""
    cache = tmp_path / "venvs"
    key = venv_key(sys.executable, ["pkg==1"], False)
    (cache / key / "lib").mkdir(parents=True)
    (cache / key / "lib" / "half-installed").write_text("x")
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str]:
        calls.append(argv)
        (cache / key / "bin").mkdir(parents=True, exist_ok=True)
        return 0, ""

    import logging

    log = logging.getLogger("test")
    python = ensure_venv(
        str(cache), sys.executable, ["pkg==1"], False, installer="pip", run=run, log=log
    )
    assert python == str(cache / key / "bin" / "python")
    assert not (cache / key / "lib" / "half-installed").exists()
    assert calls[0][:3] == [sys.executable, "-m", "venv"]
    assert calls[1][-1] == "pkg==1" and calls[1][1:4] == ["-m", "pip", "install"]
    # ready: not built again
    assert ensure_venv(
        str(cache), sys.executable, ["pkg==1"], False, installer="pip", run=run, log=log
    )
    assert len(calls) == 2
    # a failed step removes its folder and says what failed, with the installer's words
    calls.clear()
    failing = lambda argv: (1, "ERROR: No matching distribution found for nope==0")  # noqa: E731
    with pytest.raises(Exception, match="No matching distribution found for nope==0"):
        ensure_venv(
            str(cache), sys.executable, ["nope==0"], False, installer="pip", run=failing, log=log
        )
    assert not (cache / venv_key(sys.executable, ["nope==0"], False)).exists()


UV_SCRIPT = """
import logging, subprocess, sys
from orchestrator.engine.venv_cache import ensure_venv

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")

def run(argv):
    print("run:", argv[0], argv[1])
    done = subprocess.run(argv, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr

print("python:", ensure_venv(sys.argv[1], sys.executable, ["tabulate==0.10.0"], False,
                             installer="auto", run=run, log=logging.getLogger("build")))
"""


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH (pip builds are tested)")
def test_uv_builds_the_environment_when_it_is_on_path(tmp_path):
    """uv reads its own configuration (UV_INDEX_URL...), not pip.conf: give it the index
    pip is configured with."""
    cache = tmp_path / "venvs"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    index = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.extra-index-url"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    if index and "UV_INDEX_URL" not in env:
        env["UV_INDEX_URL"] = index[0]
    done = subprocess.run(
        [sys.executable, "-c", UV_SCRIPT, str(cache)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"run: {shutil.which('uv')} venv" in done.stdout
    assert "with uv" in done.stdout
    python = done.stdout.split("python: ")[-1].strip()
    check = [python, "-I", "-c", "import tabulate; print(tabulate.__version__)"]
    assert (
        subprocess.run(check, capture_output=True, text=True, check=True).stdout.strip() == "0.10.0"
    )


def test_tasks_test_runs_a_virtualenv_task_in_its_environment(
    settings, write_dag, venv_cache, capfd
):
    from orchestrator.engine.tasktest import run_task_test

    write_dag("pretty.py", PRETTY_DAG)
    venv_settings = settings.with_(venv_cache_dir=str(venv_cache))
    assert run_task_test(venv_settings, "pretty", "again", None, {}) == 0
    out = capfd.readouterr().out
    assert out.splitlines()[-1] == '"0.10.0"'
    assert "virtual environment" in out


def test_the_workers_module_path_does_not_leak_into_a_build(venv_harness, write_dag, tmp_path):
    """A tabulate 0.10.0 on the PYTHONPATH the task is given: pip must not take it for
    installed (it is not in the environment), and the function must not import it."""
    fake = tmp_path / "fake_site"
    (fake / "tabulate-0.10.0.dist-info").mkdir(parents=True)
    (fake / "tabulate-0.10.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tabulate\nVersion: 0.10.0\n"
    )
    (fake / "tabulate-0.10.0.dist-info" / "RECORD").write_text("")
    (fake / "tabulate.py").write_text("__version__ = 'fake'\n")
    h = venv_harness
    write_dag(
        "leak.py",
        f"""
        from orchestrator import DAG, task

        with DAG("leak", schedule=None) as dag:
            @task.virtualenv(requirements=["tabulate>=0.10,<0.11"], env={{"PYTHONPATH": {str(fake)!r}}})
            def which():
                import tabulate

                return tabulate.__version__
        """,
    )
    assert h.parse().errors == 0
    run = h.store.trigger_run("leak", h.clock.now())
    h.run_until_finished(run.run_id)
    assert _result(h.store, run.run_id, "which") == ("success", "0.10.0")


def test_system_site_packages_and_a_python_the_worker_does_not_have(venv_harness, write_dag):
    h = venv_harness
    write_dag(
        "sites.py",
        """
        from orchestrator import DAG, task

        with DAG("sites", schedule=None) as dag:
            @task.virtualenv(system_site_packages=True)
            def with_site():
                import importlib.util

                return importlib.util.find_spec("networkx") is not None  # beside the worker

            @task.virtualenv
            def without_site():
                import importlib.util

                return importlib.util.find_spec("networkx") is not None

            @task.virtualenv(python="no-such-python-9.9")
            def nowhere():
                return 1
        """,
    )
    assert h.parse().errors == 0
    run = h.store.trigger_run("sites", h.clock.now())
    h.run_until_finished(run.run_id)
    assert _result(h.store, run.run_id, "with_site") == ("success", True)
    assert _result(h.store, run.run_id, "without_site") == ("success", False)
    assert h.store.task_instance(run.run_id, "nowhere").state == "failed"
    assert "virtualenv python 'no-such-python-9.9' is not an executable on this worker" in _error(
        h.store, run.run_id, "nowhere"
    )


@pytest.fixture
def own_cache_harness(store, settings, clock, tmp_path):
    h = Harness(
        store,
        settings.with_(venv_cache_dir=str(tmp_path / "own-venvs"), venv_installer="pip"),
        clock,
    )
    yield h
    h.close()


def test_a_build_killed_by_the_timeout_is_built_again_by_the_next_try(
    own_cache_harness, write_dag, tmp_path
):
    """The try's timeout kills the build half-way (python -m venv takes longer than 1 s):
    no marker is left, the lock is free, and the next build starts over and completes."""
    h = own_cache_harness
    venv_cache = tmp_path / "own-venvs"
    write_dag(
        "killed.py",
        """
        from orchestrator import DAG, task

        with DAG("killed", schedule=None) as dag:
            @task.virtualenv(requirements=["tabulate>=0.9"], timeout=1)
            def slow_build():
                import tabulate

                return tabulate.__version__
        """,
    )
    assert h.parse().errors == 0
    run = h.store.trigger_run("killed", h.clock.now())
    h.tick()
    h.worker.run_until_idle()
    assert h.store.task_instance(run.run_id, "slow_build").state == "failed"
    key = venv_key(sys.executable, ["tabulate>=0.9"], False)
    assert not (venv_cache / key / MARKER).exists()
    half_built = (venv_cache / key).exists()  # killed during python -m venv, or before it
    lines: list[str] = []

    class Log:
        def info(self, fmt, *args):
            lines.append(fmt % args)

    def run(argv):
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
        return done.returncode, done.stdout + done.stderr

    python = ensure_venv(
        str(venv_cache),
        sys.executable,
        ["tabulate>=0.9"],
        False,
        installer="pip",
        run=run,
        log=Log(),
    )
    assert (venv_cache / key / MARKER).is_file()
    assert not any("waiting" in line for line in lines)  # the killed build's lock is free
    assert any("removing the unfinished build" in line for line in lines) == half_built
    assert subprocess.run([python, "-I", "-c", "import tabulate"], check=False).returncode == 0


def test_an_external_python_task_called_with_references_gets_the_values(venv_harness, write_dag):
    h = venv_harness
    write_dag(
        "external_flow.py",
        f"""
        from orchestrator import DAG, task

        with DAG("external_flow", schedule=None) as dag:
            @task
            def extract():
                return {{"rows": [1, 2, 3]}}

            @task.external_python(python={sys.executable!r})
            def total(rows, *, scale):
                import sys

                return [sum(rows) * scale, sys.flags.isolated]

            @task.external_python(python={sys.executable!r})
            def with_ctx(ctx, rows):
                return [ctx.task_id, len(rows)]

            data = extract()
            total(data["rows"], scale=10)
            with_ctx(data["rows"])
        """,
    )
    assert h.parse().errors == 0, h.store.import_errors()
    run = h.store.trigger_run("external_flow", h.clock.now())
    assert h.run_until_finished(run.run_id).state == "success"
    assert _result(h.store, run.run_id, "total") == ("success", [60, 1])
    assert _result(h.store, run.run_id, "with_ctx") == ("success", ["with_ctx", 3])
