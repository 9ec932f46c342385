"""Parse speed: N DAG files parsed and stored by one ``DagProcessor.scan`` on a fresh store.

Each file defines one hourly DAG of 10 tasks (a small fan-out, a shell task, tags and
a description), like a typical hand-written DAG file. The figure is the wall time of
the first scan (every file new), the path ``orchestrator standalone`` and a scheduler
take at start-up; the target is 1,000 files in under 10 s.

    python bench/parse_speed.py                   # 1,000 files, SQLite
    python bench/parse_speed.py --files 200       # fewer
    python bench/run.py --scenario parse          # the same through the bench runner
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

TARGET_S = 10.0


def dag_source(n: int) -> str:
    return textwrap.dedent(
        f"""
        from datetime import datetime, timedelta

        from orchestrator import DAG, task


        def step(ctx):
            return None


        with DAG(
            "bench_parse_{n:05d}",
            schedule="{n % 60} * * * *",
            start_date=datetime(2026, 1, 1),
            timezone="UTC",
            description="generated DAG number {n}",
            tags=["bench", "parse"],
            default_retries=2,
            retry_delay=timedelta(seconds=30),
        ) as dag:
            extract = task(task_id="extract")(step)
            load = task(task_id="load")(step)
            for i in range(7):
                extract >> task(task_id=f"transform_{{i}}")(step) >> load
            load >> dag.shell("archive", "echo {{{{ ds }}}}")
        """
    )


def write_files(folder: str, count: int) -> None:
    os.makedirs(folder, exist_ok=True)
    for n in range(count):
        with open(os.path.join(folder, f"dag_{n:05d}.py"), "w", encoding="utf-8") as fh:
            fh.write(dag_source(n))


def measure(url: str, workdir: str, count: int) -> dict[str, float]:
    """Write ``count`` files, scan them once into the (migrated, empty) store at ``url``."""
    from orchestrator.clock import SystemClock
    from orchestrator.engine.processor import DagProcessor
    from orchestrator.settings import Settings
    from orchestrator.store import Store

    dags = os.path.join(workdir, "dags")
    write_files(dags, count)
    settings = Settings.load(
        {}, cwd=workdir, database_url=url, dags_folder=dags, state_dir=f"{workdir}/state"
    )
    store = Store(url)
    processor = DagProcessor(store, settings)
    try:
        t0 = time.perf_counter()
        result = processor.scan(SystemClock().now())
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        processor.scan(SystemClock().now())  # nothing changed: stat() only
        again = time.perf_counter() - t0
        stored = len(store.list_dags())
    finally:
        store.dispose()
    if result.errors or stored != count:
        raise RuntimeError(f"expected {count} DAGs, stored {stored}; {result}")
    return {"files": count, "scan_s": first, "files_per_s": count / first, "rescan_s": again}


def scenario(ctx) -> list:  # noqa: ANN001 - benchlib.Context
    """``bench/run.py --scenario parse``."""
    from benchlib import figure

    count = ctx.args.parse_files
    got = measure(ctx.url, ctx.workdir, count)
    b = ctx.backend
    scaled = got["scan_s"] * 1000 / count  # the target is for 1,000 files
    return [
        figure(b, "parse", "files", count, "files"),
        figure(b, "parse", "scan_s", got["scan_s"], "s"),
        figure(b, "parse", "scan_s_per_1000_files", scaled, "s"),
        figure(b, "parse", "files_per_s", got["files_per_s"], "files/s"),
        figure(b, "parse", "rescan_unchanged_s", got["rescan_s"], "s"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    args = parser.parse_args(argv)
    from orchestrator.store.core.db import upgrade

    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.db"
        upgrade(url)
        got = measure(url, tmp, args.files)
    status = "meets" if got["scan_s"] * 1000 / args.files <= TARGET_S else "MISSES"
    print(
        f"{got['files']} files parsed and stored in {got['scan_s']:.2f} s "
        f"({got['files_per_s']:.0f} files/s; target 1,000 in < {TARGET_S:g} s: {status}); "
        f"unchanged rescan {got['rescan_s'] * 1000:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
