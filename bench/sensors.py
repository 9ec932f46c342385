"""Sensors waiting in reschedule mode must not slow the tasks that run (issue 15).

One standalone-like engine (a scheduler and one worker at the default concurrency, in
threads of this process, on SQLite by default) runs a DAG of ``--tasks`` independent
no-op tasks, run after run, for at least ``--window`` seconds: first alone, then
while ``--sensors`` Python sensors (``@task.sensor``, reschedule mode,
``--poke-interval`` seconds, never met) wait in the same store and are poked by the
same worker. The window spans at least two poke intervals, so every sensor is poked
during it (the measurement cannot fall between two waves of pokes). Prints both
speeds (tasks per second), the ratio (target: >= 0.80) and how many pokes happened
during the window.

    python bench/sensors.py [--sensors 1000] [--tasks 1000] [--poke-interval 30]
                            [--window 70] [--kind python|file] [--backend sqlite|postgres]
                            [--json] [--profile DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import benchlib  # noqa: E402  (puts the repository on sys.path)
from sqlalchemy import func, select  # noqa: E402

from orchestrator.clock import SystemClock  # noqa: E402
from orchestrator.engine.processor import DagProcessor  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from orchestrator.states import RUN_FINISHED  # noqa: E402
from orchestrator.store import Store  # noqa: E402
from orchestrator.store.core import models as m  # noqa: E402


def sensor_dag(count: int, poke_interval: float, kind: str) -> str:
    if kind == "file":  # built-in: the worker checks, no task process
        return textwrap.dedent(
            f"""
            from orchestrator import DAG
            from orchestrator.sensors import file_sensor

            with DAG("bench_sensors", schedule=None) as dag:
                for i in range({count}):
                    file_sensor(f"s_{{i:05d}}", f"/nonexistent/bench/never_{{i}}.csv",
                                poke_interval={poke_interval}, timeout=86400)
            """
        )
    return textwrap.dedent(
        f"""
        from orchestrator import DAG, task


        def never(ctx):
            return False


        with DAG("bench_sensors", schedule=None) as dag:
            for i in range({count}):
                task.sensor(task_id=f"s_{{i:05d}}", poke_interval={poke_interval},
                            timeout=86400)(never)
        """
    )


def pokes_so_far(store: Store) -> int:
    """Pokes recorded: unmet pokes of every sensor, plus the ones running now."""
    ti = m.task_instances
    with store.read() as conn:
        return int(
            conn.execute(
                select(func.coalesce(func.sum(ti.c.poke_count), 0)).where(
                    ti.c.dag_id == "bench_sensors"
                )
            ).scalar_one()
        )


def run_for(store: Store, engine: benchlib.Engine, window: float, timeout: float) -> tuple:
    """Run the task DAG back to back for at least ``window`` s: (tasks, seconds, runs)."""
    clock = SystemClock()
    started = time.monotonic()
    tasks = runs = 0
    while runs == 0 or time.monotonic() - started < window:
        run = store.trigger_run("bench_tasks", clock.now())
        engine.wake_scheduler()
        deadline = time.monotonic() + timeout
        while True:
            run = store.get_run(run.run_id)
            if run.state in RUN_FINISHED:
                break
            if time.monotonic() > deadline:
                counts = Counter(t.state for t in store.task_instances(run.run_id))
                raise benchlib.BenchError(f"run {run.run_id} still {run.state}: {dict(counts)}")
            time.sleep(0.02)
        if run.state != "success":
            raise benchlib.BenchError(f"run {run.run_id} ended {run.state}")
        tasks += len(store.task_instances(run.run_id))
        runs += 1
    return tasks, time.monotonic() - started, runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sensors", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=1000)
    p.add_argument("--poke-interval", type=float, default=30.0)
    p.add_argument(
        "--kind",
        choices=("python", "file"),
        default="python",
        help="@task.sensor poked in task processes, or file_sensor checked by the worker",
    )
    p.add_argument("--window", type=float, default=None, help="default: 2 poke intervals + 10 s")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--admin-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--profile", metavar="DIR", help="cProfile the scheduler and worker threads")
    args = p.parse_args(argv)
    window = args.window if args.window is not None else 2 * args.poke_interval + 10
    workdir = tempfile.mkdtemp(prefix="bench-sensors-")
    with benchlib.fresh_database(args.backend, workdir, args.admin_url) as url:
        dags = os.path.join(workdir, "dags")
        os.makedirs(dags)
        with open(os.path.join(dags, "bench_tasks.py"), "w", encoding="utf-8") as fh:
            fh.write(benchlib.flat_dag(args.tasks).replace("bench_raw", "bench_tasks"))
        with open(os.path.join(dags, "bench_sensors.py"), "w", encoding="utf-8") as fh:
            fh.write(sensor_dag(args.sensors, args.poke_interval, args.kind))
        settings = Settings.load({}, cwd=workdir, database_url=url, dags_folder=dags,
                                 state_dir=os.path.join(workdir, "state"),
                                 parse_timeout=120)  # fmt: skip
        store = Store(settings.database_url)
        scanned = DagProcessor(store, settings).scan(SystemClock().now())
        if scanned.errors:
            raise benchlib.BenchError("; ".join(e.message for e in store.import_errors()))
        concurrency = settings.worker_concurrency
        profiles = benchlib.Profiles(args.profile)
        engine = benchlib.Engine(store, settings, 1, concurrency, profiles)
        engine.start()
        try:
            run_for(store, engine, 0, args.timeout)  # warm-up: task processes import the DAG
            alone = run_for(store, engine, window, args.timeout)
            sensors = store.trigger_run("bench_sensors", SystemClock().now())
            engine.wake_scheduler()
            t0 = time.monotonic()
            while True:  # every sensor poked once and waiting in the store
                states = Counter(t.state for t in store.task_instances(sensors.run_id))
                if states.get("up_for_reschedule", 0) == args.sensors:
                    break
                if time.monotonic() - t0 > args.timeout:
                    raise benchlib.BenchError(f"sensors not all waiting: {dict(states)}")
                time.sleep(0.2)
            first_round = time.monotonic() - t0
            before = pokes_so_far(store)
            beside = run_for(store, engine, window, args.timeout)
            pokes = pokes_so_far(store) - before
            states = Counter(t.state for t in store.task_instances(sensors.run_id))
        finally:
            engine.close()
            profiles.dump("sensors", 40)
            store.dispose()
    speed_alone = alone[0] / alone[1]
    speed_beside = beside[0] / beside[1]
    out = {
        "backend": args.backend,
        "concurrency": concurrency,
        "sensors": args.sensors,
        "kind": args.kind,
        "poke_interval_s": args.poke_interval,
        "first_poke_round_s": round(first_round, 2),
        "alone_tasks_per_s": round(speed_alone, 1),
        "alone": {"tasks": alone[0], "seconds": round(alone[1], 2), "runs": alone[2]},
        "with_sensors_tasks_per_s": round(speed_beside, 1),
        "with_sensors": {"tasks": beside[0], "seconds": round(beside[1], 2), "runs": beside[2]},
        "pokes_during_window": pokes,
        "pokes_if_on_time": round(args.sensors * beside[1] / args.poke_interval),
        "sensor_states_after": dict(states),
        "ratio": round(speed_beside / speed_alone, 3),
        "target_ratio": 0.8,
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"backend {args.backend}, one worker at concurrency {concurrency}")
        print(f"{args.tasks}-task DAG alone:          {speed_alone:8.1f} tasks/s "
              f"({alone[0]} tasks in {alone[1]:.1f} s, {alone[2]} runs)")  # fmt: skip
        print(f"beside {args.sensors} waiting {args.kind} sensors: {speed_beside:8.1f} tasks/s "
              f"({beside[0]} tasks in {beside[1]:.1f} s, {beside[2]} runs; {pokes} pokes "
              f"meanwhile, poke_interval {args.poke_interval:g} s)")  # fmt: skip
        due = args.sensors * beside[1] / args.poke_interval
        print(f"pokes during the window: {pokes} ({pokes / due:.0%} of the {due:.0f} due if every "
              "poke were on time)")  # fmt: skip
        print(f"first poke of all sensors took {first_round:.1f} s")
        print(f"ratio {speed_beside / speed_alone:.3f} (target >= 0.80)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
