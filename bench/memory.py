"""Memory of ``orchestrator standalone`` with 100 DAGs loaded: PSS of all its processes.

Writes 100 DAG files (hourly, 10 tasks each), starts ``orchestrator standalone`` as a
subprocess on a temporary folder (its own SQLite database) and a free port, waits until
every DAG is stored, triggers a few runs and waits until they succeeded, then sums the
proportional set size (``Pss`` in ``/proc/PID/smaps_rollup``) of the standalone process
and all its descendants (the forkserver, task processes, parse children if any), a few
times over some seconds; the figure is the largest sum. Target: at most 250 MB.

PSS splits each shared page between the processes that map it, so the sum is what the
whole tree really costs the machine (RSS would count shared pages once per process).

    python bench/memory.py                    # 100 DAGs, 5 runs
    python bench/memory.py --dags 100 --runs 8 -v
    python bench/run.py --scenario memory --backend sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime, timedelta

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

TARGET_MB = 250.0


def dag_source(n: int) -> str:
    day = datetime.now(UTC) + timedelta(days=1)
    start = f"{day.year}, {day.month}, {day.day}"  # no leading zero: 02 is a SyntaxError
    return textwrap.dedent(
        f"""
        from datetime import UTC, datetime

        from orchestrator import DAG, task


        def step(ctx):
            return {{"n": {n}}}


        with DAG("mem_{n:03d}", schedule="@hourly", start_date=datetime({start}, tzinfo=UTC),
                 tags=["bench"]) as dag:
            first = task(task_id="first")(step)
            last = task(task_id="last")(step)
            for i in range(8):
                first >> task(task_id=f"middle_{{i}}")(step) >> last
        """
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (through /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", encoding="ascii") as fh:
                    todo += [int(c) for c in fh.read().split()]
    return out


def pss_kb(pid: int) -> int:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def describe(pid: int) -> str:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as fh:
        args = fh.read().split(b"\0")
        text = " ".join(a.decode(errors="replace") for a in args if a)
        if "forkserver" in text:
            return "forkserver"
        if "from multiprocessing" in text or "--multiprocessing-fork" in text:
            return "child"
        return (
            os.path.basename(args[0].decode())
            + " "
            + " ".join(a.decode(errors="replace") for a in args[1:3])
        )
    return "?"


def tree_pss(pid: int) -> tuple[int, list[tuple[int, str, int]]]:
    rows = [(p, describe(p), pss_kb(p)) for p in descendants(pid)]
    return sum(r[2] for r in rows), rows


def command() -> list[str]:
    script = shutil.which("orchestrator")
    return [script] if script else [sys.executable, "-m", "orchestrator"]


def measure(url: str | None, workdir: str, dags: int, runs: int, verbose: bool = False) -> dict:
    from orchestrator.clock import SystemClock
    from orchestrator.states import RUN_FINISHED
    from orchestrator.store import Store

    folder = os.path.join(workdir, "dags")
    os.makedirs(folder, exist_ok=True)
    for n in range(dags):
        with open(os.path.join(folder, f"mem_{n:03d}.py"), "w", encoding="utf-8") as fh:
            fh.write(dag_source(n))
    url = url or f"sqlite:///{workdir}/state/orchestrator.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(
        ORCHESTRATOR_STATE_DIR=os.path.join(workdir, "state"),
        ORCHESTRATOR_DAGS_FOLDER=folder,
        ORCHESTRATOR_DATABASE_URL=url,
        ORCHESTRATOR_ALLOW_ROOT_TASKS="1",  # its own no-op tasks, run as root (issue 24)
    )
    port = free_port()
    log = open(os.path.join(workdir, "standalone.log"), "w+", encoding="utf-8")  # noqa: SIM115
    proc = subprocess.Popen(
        [*command(), "standalone", "--port", str(port)],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    store = None
    started = time.monotonic()
    try:
        deadline = started + 120
        while True:
            log.seek(0)
            if "web UI at" in log.read():
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"standalone did not start:\n{log.read()[-3000:]}")
            time.sleep(0.1)
        ready_s = time.monotonic() - started
        store = Store(url)
        while len(store.list_dags()) < dags:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(store.list_dags())} of {dags} DAGs stored")
            time.sleep(0.2)
        triggered = [
            store.trigger_run(f"mem_{n:03d}", SystemClock().now()).run_id for n in range(runs)
        ]
        while True:
            states = [store.get_run(r).state for r in triggered]
            if all(s in RUN_FINISHED for s in states):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"runs not finished: {states}")
            time.sleep(0.2)
        if any(s != "success" for s in states):
            raise RuntimeError(f"runs did not all succeed: {states}")
        samples = []
        for _ in range(5):  # idle after the runs: the steady state
            samples.append(tree_pss(proc.pid))
            time.sleep(1.0)
        total, rows = max(samples, key=lambda s: s[0])
    finally:
        if store is not None:
            store.dispose()
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        log.close()
    if verbose:
        for pid, name, kb in rows:
            print(f"  {pid:>7} {kb / 1024:8.1f} MB  {name}", file=sys.stderr)
    return {
        "dags": dags,
        "runs": runs,
        "pss_mb": total / 1024,
        "processes": len(rows),
        "main_pss_mb": rows[0][2] / 1024,
        "ready_s": ready_s,
    }


def scenario(ctx) -> list:  # noqa: ANN001 - benchlib.Context
    """``bench/run.py --scenario memory``: standalone on this scenario's database."""
    from benchlib import figure

    got = measure(ctx.url, ctx.workdir, ctx.args.memory_dags, 5, ctx.args.verbose)
    b = ctx.backend
    return [
        figure(b, "memory", "dags", got["dags"], "dags"),
        figure(b, "memory", "processes", got["processes"], "processes"),
        figure(b, "memory", "main_process_pss_mb", got["main_pss_mb"], "MB"),
        figure(b, "memory", "pss_mb", got["pss_mb"], "MB"),
        figure(b, "memory", "start_to_ui_s", got["ready_s"], "s"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dags", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5, help="runs triggered and awaited")
    parser.add_argument("-v", "--verbose", action="store_true", help="PSS of each process")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        got = measure(None, tmp, args.dags, args.runs, args.verbose)
    status = "meets" if got["pss_mb"] <= TARGET_MB else "MISSES"
    print(
        f"standalone with {got['dags']} DAGs after {got['runs']} runs: {got['pss_mb']:.1f} MB PSS "
        f"in {got['processes']} processes (main {got['main_pss_mb']:.1f} MB); "
        f"target <= {TARGET_MB:g} MB: {status}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
