"""The test runner of ``tools.mutate``: each mutant's pytest in a process forked from
one that has imported the third-party libraries already.

Never ``orchestrator``, ``webui`` or ``tests``: the child imports those from the scratch
tree, mutant included (an assert checks that the parent holds none of them). Under a
loaded machine a fresh test process spent ~8 s starting; a unit module's mutant now
costs about a second.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time

_PRELOAD = (
    "pytest", "sqlalchemy", "sqlalchemy.dialects.postgresql", "sqlalchemy.dialects.sqlite",
    "flask", "jinja2", "jinja2.sandbox", "alembic.command", "croniter", "networkx", "requests",
    "psycopg", "cryptography.fernet", "prometheus_client", "waitress",
)  # fmt: skip


def install() -> None:
    """Make cosmic-ray run each mutant's tests in a process forked from this one, which
    has imported the third-party libraries (never ``orchestrator``, ``webui`` or
    ``tests``: the child imports those from the tree, mutant included). Under load this
    saves most of a test process's start-up."""
    import importlib
    import signal
    import tempfile
    import types

    import cosmic_ray.mutating
    from cosmic_ray.work_item import TestOutcome

    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    assert not any(m.split(".")[0] in ("orchestrator", "webui", "tests") for m in sys.modules)

    def run_tests(command: str, timeout: float):
        argv = shlex.split(command)
        root, args = argv[4], argv[5:]  # python -m tools.mutation_pytest --root ROOT ...
        with tempfile.TemporaryFile() as out:
            pid = os.fork()
            if pid == 0:  # the child: its own process group, for the processes it starts
                code = 3
                try:
                    os.setsid()
                    os.dup2(out.fileno(), 1)
                    os.dup2(out.fileno(), 2)
                    from tools.mutation_pytest import run_in

                    # no __main__ to re-import in the processes the tests spawn
                    sys.modules["__main__"] = types.ModuleType("__main__")

                    code = run_in(root, args)
                except BaseException:
                    import traceback

                    traceback.print_exc()
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            deadline = time.monotonic() + timeout
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() > deadline:
                    os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return TestOutcome.KILLED, "timeout"
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # what the tests left running
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
        code = os.waitstatus_to_exitcode(status)
        return (TestOutcome.KILLED if code else TestOutcome.SURVIVED), text

    cosmic_ray.mutating.run_tests = run_tests
