"""Deferrable tasks and asset watchers under load (issue 30).

Three scenarios, on SQLite by default (``--backend postgres`` for PostgreSQL):

- ``hold``: ``--count`` (10,000) deferred task instances, each waiting on a
  ``DateTimeTrigger`` a day ahead, held by one real ``orchestrator triggerer``
  process; its resident memory and its CPU (utime + stime over ``--window`` seconds)
  while they wait. Targets: <= 200 MB, <= 10 % of one core.
- ``resume``: ``--events`` deferred tasks whose triggers fire 20 ms apart, a triggerer
  and a worker in threads woken in-process (as ``standalone``); for each, the resumed
  try's claim time minus the trigger's moment. Target: p95 <= 100 ms on SQLite.
- ``redis``: ``--messages`` Redis stream entries published at once into a watched
  stream; how fast the watcher turns them into asset events. Target: >= 1,000/s.
- ``rate``: the same through ``--triggerers`` (1 or 2) real ``orchestrator triggerer``
  processes sharing the watcher (its lease: one reads, the other takes over if it
  dies); messages/s into asset events. Target: >= 1,000/s on SQLite and on
  PostgreSQL with two triggerers.
- ``broker-latency``: per ``--broker`` (or ``all``), a DAG scheduled on an asset with
  that broker's watcher, a triggerer and a scheduler in threads woken in-process (as
  ``standalone``; the webhook through the web server), ``--messages`` sent one at a
  time ``--gap`` ms apart with the publish moment in the message; for each, the
  consuming run's start minus that moment. Target: p95 <= 250 ms per broker.

    python bench/deferral.py [--scenario hold|resume|redis|rate|broker-latency|all]
                             [--count 10000] [--events 200] [--messages 20000]
                             [--backend sqlite|postgres] [--triggerers 1|2]
                             [--broker redis|rabbitmq|nats|mqtt|postgres|webhook|all]
                             [--gap 100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from orchestrator.clock import SystemClock  # noqa: E402
from orchestrator.engine.processor import DagProcessor  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from orchestrator.store import Store  # noqa: E402
from orchestrator.store.core.db import upgrade  # noqa: E402

DAG = """
import asyncio
from datetime import datetime, timezone
from orchestrator import DAG, BaseTrigger, TriggerEvent, task

class StampTrigger(BaseTrigger):
    # fires at moment; its event says when it fired (the resume latency counts from it)
    def __init__(self, moment):
        super().__init__()
        self.moment = moment

    def serialize(self):
        return (f"{{__name__}}.StampTrigger", {{"moment": self.moment}})

    async def run(self):
        while (left := (self.moment - datetime.now(timezone.utc)).total_seconds()) > 0:
            await asyncio.sleep(left)
        yield TriggerEvent({{"fired_at": datetime.now(timezone.utc).isoformat()}})

with DAG("bench_defer", schedule=None, max_active_tasks=100000) as dag:
    @task
    def wait(ctx, n):
        raise RuntimeError("deferred by the benchmark")

    wait.expand(n=list(range({count})))

def resume(ctx, event):
    return event
"""


def _setup(workdir: str, backend: str, count: int) -> tuple[Store, Settings, str]:
    dags = os.path.join(workdir, "dags")
    os.makedirs(dags, exist_ok=True)
    with open(os.path.join(dags, "bench_defer.py"), "w") as f:
        f.write(textwrap.dedent(DAG.format(count=count)))
    if backend == "postgres":
        from sqlalchemy import create_engine, text

        name = f"bench_defer_{uuid.uuid4().hex[:6]}"
        admin = create_engine("postgresql+psycopg://postgres@127.0.0.1/postgres",
                              isolation_level="AUTOCOMMIT")  # fmt: skip
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        url = f"postgresql+psycopg://postgres@127.0.0.1/{name}"
    else:
        url = f"sqlite:///{workdir}/bench.db"
    upgrade(url)
    settings = Settings.load({}, cwd=workdir, database_url=url, dags_folder=dags,
                             state_dir=os.path.join(workdir, "state"), lease_seconds=30,
                             heartbeat_seconds=10, worker_concurrency=4)  # fmt: skip
    store = Store(url, settings=settings)
    DagProcessor(store, settings).scan(datetime.now(UTC))
    return store, settings, url


def _defer_all(store: Store, moments: list[datetime], classpath: str | None = None) -> str:
    from orchestrator.engine.scheduler import Scheduler

    clock = SystemClock()
    run = store.trigger_run("bench_defer", clock.now())
    sched = Scheduler(store, clock, Settings.load({}), scheduler_id="bench")
    sched.tick(clock.now())
    sched.tick(clock.now())
    i = 0
    while i < len(moments):
        claims = store.claim("bench", clock.now(), timedelta(hours=1), limit=500)
        if not claims:
            break
        for c in claims:
            kwargs = json.dumps({"moment": {"__datetime__": moments[c.map_index].isoformat()}})
            store.defer_task(c, {"classpath": classpath or "orchestrator.triggers.DateTimeTrigger",
                                 "kwargs": kwargs, "method_name": "resume",
                                 "next_kwargs": "{}", "timeout": None}, clock.now())  # fmt: skip
            i += 1
    return run.run_id


def _proc_stats(pid: int) -> tuple[float, float]:
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return rss, (int(fields[11]) + int(fields[12])) / ticks


def hold(backend: str, count: int, window: float) -> dict:
    with tempfile.TemporaryDirectory() as workdir:
        store, settings, url = _setup(workdir, backend, count)
        later = datetime.now(UTC) + timedelta(days=1)
        _defer_all(store, [later] * count)
        env = dict(os.environ, ORCHESTRATOR_DATABASE_URL=url, ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
                   ORCHESTRATOR_STATE_DIR=settings.state_dir, PYTHONPATH=os.getcwd())  # fmt: skip
        proc = subprocess.Popen([sys.executable, "-m", "orchestrator", "triggerer"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            t0 = time.monotonic()
            while store.triggerers() == [] or store.triggerers()[0].triggers < count:
                if time.monotonic() - t0 > 300:
                    raise SystemExit("the triggerer did not take every trigger in 300 s")
                time.sleep(0.5)
            took = time.monotonic() - t0
            time.sleep(2)
            _, cpu0 = _proc_stats(proc.pid)
            start = time.monotonic()
            time.sleep(window)
            rss, cpu1 = _proc_stats(proc.pid)
            cpu = (cpu1 - cpu0) / (time.monotonic() - start) * 100
        finally:
            proc.terminate()
            proc.wait(30)
            store.dispose()
    return {"scenario": "hold", "backend": backend, "triggers": count,
            "took_all_seconds": round(took, 1), "rss_mb": round(rss, 1),
            "cpu_percent_of_one_core": round(cpu, 2)}  # fmt: skip


def resume(backend: str, events: int) -> dict:
    from orchestrator.engine.triggerer import Triggerer
    from orchestrator.engine.wakeup import WakeEvent
    from orchestrator.engine.worker import Worker

    with tempfile.TemporaryDirectory() as workdir:
        store, settings, _ = _setup(workdir, backend, events)
        from orchestrator.authoring.triggers import dag_module_name

        path = os.path.join(settings.dags_folder, "bench_defer.py")
        first = datetime.now(UTC) + timedelta(seconds=20)
        moments = [first + timedelta(milliseconds=20 * i) for i in range(events)]
        run_id = _defer_all(store, moments, f"{dag_module_name(path)}.StampTrigger")
        clock, stop, wake = SystemClock(), threading.Event(), WakeEvent()
        worker = Worker(store, clock, settings, wake=wake, worker_id="bench-worker")
        trig = Triggerer(store, clock, settings, on_fire=wake, triggerer_id="bench-triggerer")
        threads = [threading.Thread(target=worker.run_forever, args=(stop,), daemon=True),
                   threading.Thread(target=trig.run_forever, args=(stop,), daemon=True)]  # fmt: skip
        for t in threads:
            t.start()
        try:
            end = time.monotonic() + 120
            while time.monotonic() < end:
                done = [t for t in store.task_instances(run_id) if t.state == "success"]
                if len(done) >= events:
                    break
                time.sleep(0.5)
        finally:
            stop.set()
            wake.set()
            for t in threads:
                t.join(20)
        tis = [t for t in store.task_instances(run_id) if t.task_id == "wait"]
        results = store.instance_results(run_id)
        lat = sorted(
            (t.start_date - datetime.fromisoformat(json.loads(results[("wait", t.map_index)])["fired_at"])).total_seconds() * 1000
            for t in tis if t.state == "success" and t.start_date
        )  # fmt: skip
        store.dispose()
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    return {"scenario": "resume", "backend": backend, "events": events, "resumed": len(lat),
            "p50_ms": round(statistics.median(lat), 1), "p95_ms": round(p(0.95), 1),
            "max_ms": round(lat[-1], 1)}  # fmt: skip


def redis_rate(backend: str, messages: int) -> dict:
    import redis

    from orchestrator.authoring.credentials import Connection
    from orchestrator.engine.triggerer import Triggerer
    from orchestrator.store.credentials.secret_box import box_of

    stream = f"bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as workdir:
        store, settings, _ = _setup(workdir, backend, 1)
        with open(os.path.join(settings.dags_folder, "watched.py"), "w") as f:
            f.write(textwrap.dedent(f"""
                from orchestrator import DAG, Asset, task
                from orchestrator.watchers import RedisStreamWatcher
                a = Asset("bench://orders", watchers=[RedisStreamWatcher(conn_id="bus", stream={stream!r})])
                with DAG("watched", schedule=a) as dag:
                    @task
                    def t(ctx):
                        pass
                """))  # fmt: skip
        DagProcessor(store, settings).scan(datetime.now(UTC))
        store.add_connection(Connection("bus", "redis", host="127.0.0.1", port=6379),
                             datetime.now(UTC), box_of(settings))  # fmt: skip
        r = redis.Redis()
        clock, stop = SystemClock(), threading.Event()
        trig = Triggerer(store, clock, settings, triggerer_id="bench-watcher")
        thread = threading.Thread(target=trig.run_forever, args=(stop,), daemon=True)
        thread.start()
        try:
            while not [w for w in store.watcher_states() if w.state == "connected"]:
                time.sleep(0.1)
            pipe = r.pipeline()
            for i in range(messages):
                pipe.xadd(stream, {"data": json.dumps({"n": i})})
            pipe.execute()
            start = time.monotonic()
            while (w := store.watcher_states()[0]).messages < messages:
                if time.monotonic() - start > 300:
                    break
                time.sleep(0.05)
            took = time.monotonic() - start
        finally:
            stop.set()
            thread.join(20)
            r.delete(stream)
            store.dispose()
    return {"scenario": "redis", "backend": backend, "messages": w.messages,
            "seconds": round(took, 2), "per_second": round(w.messages / took)}  # fmt: skip


def _watched(store: Store, settings: Settings, kind: str, src: str) -> None:
    """The watched DAG of ``kind`` stored, and its connection."""
    import watcher_load as wl

    from orchestrator.store.credentials.secret_box import box_of

    with open(os.path.join(settings.dags_folder, "watched.py"), "w") as f:
        f.write(wl.dag_source(kind, src))
    DagProcessor(store, settings).scan(datetime.now(UTC))
    store.add_connection(wl.connection(kind), datetime.now(UTC), box_of(settings))


def _wait_for(what: str, done, seconds: float = 60.0):  # noqa: ANN001, ANN202
    end = time.monotonic() + seconds
    while not (value := done()):
        if time.monotonic() > end:
            raise SystemExit(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.05)
    return value


def broker_latency(backend: str, kind: str, messages: int, gap_ms: float) -> dict:
    import asyncio

    import watcher_load as wl

    from orchestrator.engine.scheduler import Scheduler
    from orchestrator.engine.triggerer import Triggerer

    src = wl.source_name(kind)
    with tempfile.TemporaryDirectory() as workdir:
        store, settings, _ = _setup(workdir, backend, 1)
        wl.prepare(kind, src)
        _watched(store, settings, kind, src)
        clock, stop, wake = SystemClock(), threading.Event(), threading.Event()
        sched = Scheduler(store, clock, settings, wake=wake, scheduler_id="bench-scheduler")
        trig = Triggerer(store, clock, settings, on_finish=wake, triggerer_id="bench-watcher")
        threads = [threading.Thread(target=sched.run_forever, args=(stop,), daemon=True),
                   threading.Thread(target=trig.run_forever, args=(stop,), daemon=True)]  # fmt: skip
        web_url = None
        if kind == "webhook":  # the web server records it, as in standalone
            from webui import create_app
            from webui.server import serve

            ready: list[str] = []
            app = create_app(settings, store, wake_scheduler=wake)  # as standalone
            threads.append(threading.Thread(target=serve, args=(app, "127.0.0.1", 0, stop),
                                            kwargs={"on_ready": ready.append}, daemon=True))  # fmt: skip
        for t in threads:
            t.start()
        try:
            if kind == "webhook":
                web_url = _wait_for("the web server", lambda: ready and ready[0])
            else:
                _wait_for(f"the {kind} watcher to connect",
                          lambda: [w for w in store.watcher_states() if w.state == "connected"])  # fmt: skip

            async def publish() -> None:
                pub = wl.Publisher(kind, src, web_url)
                await pub.open()
                try:
                    for n in range(messages):
                        await pub.send(n)
                        await asyncio.sleep(gap_ms / 1000)
                finally:
                    await pub.close()

            asyncio.run(publish())
            lat = _wait_for("every message's run to start",
                            lambda: (x := wl.latencies(store)) and len(x) >= messages and x)  # fmt: skip
        finally:
            stop.set()
            wake.set()
            for t in threads:
                t.join(20)
            wl.cleanup(kind, src)
            store.dispose()
    p = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    total = [x for x, _ in lat]
    after = sorted(y for _, y in lat)
    return {"scenario": "broker-latency", "broker": kind, "backend": backend,
            "messages": len(lat), "gap_ms": gap_ms, "p50_ms": round(statistics.median(total), 1),
            "p95_ms": round(p(total, 0.95), 1), "max_ms": round(total[-1], 1),
            "after_commit_p95_ms": round(p(after, 0.95), 1)}  # fmt: skip


def rate(backend: str, triggerers: int, messages: int) -> dict:
    """Redis entries published as fast as a pipeline sends them into a watched stream
    read by ``triggerers`` real triggerer processes; from the first publish to the
    last event committed."""
    import redis
    import watcher_load as wl

    src = wl.source_name("redis")
    with tempfile.TemporaryDirectory() as workdir, contextlib.ExitStack() as files:
        store, settings, url = _setup(workdir, backend, 1)
        _watched(store, settings, "redis", src)
        env = dict(os.environ, ORCHESTRATOR_DATABASE_URL=url, ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
                   ORCHESTRATOR_STATE_DIR=settings.state_dir, PYTHONPATH=os.getcwd())  # fmt: skip
        procs = []
        for i in range(triggerers):  # their output in the work folder, for a failed run
            out = files.enter_context(open(os.path.join(workdir, f"triggerer-{i}.log"), "w"))
            procs.append(subprocess.Popen([sys.executable, "-m", "orchestrator", "triggerer"],
                                          env=env, stdout=out, stderr=subprocess.STDOUT))  # fmt: skip
        r = redis.Redis()
        try:
            _wait_for("the triggerers to start", lambda: len(store.triggerers()) >= triggerers, 120)
            [w] = _wait_for("the redis watcher to connect",
                            lambda: [w for w in store.watcher_states() if w.state == "connected"], 120)  # fmt: skip
            start = time.monotonic()
            pipe = r.pipeline(transaction=False)
            for i in range(messages):
                pipe.xadd(src, {"data": json.dumps({"n": i})})
                if i % 1000 == 999:
                    pipe.execute()
            pipe.execute()
            published = time.monotonic() - start
            w = _wait_for("every message's event",
                          lambda: (x := store.watcher(w.key)) and x.messages >= messages and x, 600)  # fmt: skip
            took = time.monotonic() - start
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
            r.delete(src)
            store.dispose()
    return {"scenario": "rate", "backend": backend, "triggerers": triggerers,
            "messages": w.messages, "read_by": w.triggerer_id, "publish_seconds": round(published, 2),
            "seconds": round(took, 2), "per_second": round(w.messages / took)}  # fmt: skip


SCENARIOS = ["hold", "resume", "redis", "rate", "broker-latency", "all"]
BROKER_CHOICES = ["redis", "rabbitmq", "nats", "mqtt", "postgres", "webhook", "all"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="all", choices=SCENARIOS)
    p.add_argument("--backend", default="sqlite", choices=["sqlite", "postgres"])
    p.add_argument("--count", type=int, default=10_000)
    p.add_argument("--window", type=float, default=30.0)
    p.add_argument("--events", type=int, default=200)
    p.add_argument("--messages", type=int, default=None,
                   help="20,000 for redis and rate, 100 per broker for broker-latency")  # fmt: skip
    p.add_argument("--triggerers", type=int, default=1, choices=[1, 2])
    p.add_argument("--broker", default="all", choices=BROKER_CHOICES)
    p.add_argument("--gap", type=float, default=100.0, help="ms between two messages")
    return p.parse_args(argv)


def brokers(choice: str) -> list[str]:
    import watcher_load as wl

    return list(wl.KINDS) if choice == "all" else [choice]


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    if a.scenario in ("hold", "all"):
        print(json.dumps(hold(a.backend, a.count, a.window)), flush=True)
    if a.scenario in ("resume", "all"):
        print(json.dumps(resume(a.backend, a.events)), flush=True)
    if a.scenario in ("redis", "all"):
        print(json.dumps(redis_rate(a.backend, a.messages or 20_000)), flush=True)
    if a.scenario in ("rate", "all"):
        print(json.dumps(rate(a.backend, a.triggerers, a.messages or 20_000)), flush=True)
    if a.scenario in ("broker-latency", "all"):
        for kind in brokers(a.broker):
            print(json.dumps(broker_latency(a.backend, kind, a.messages or 100, a.gap)), flush=True)


if __name__ == "__main__":
    main()
