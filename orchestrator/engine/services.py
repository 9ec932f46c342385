"""Long-running services and how ``standalone`` wires them together in one process.

``standalone`` runs the DAG processor, the scheduler, a worker and the web UI as
threads of one process (the worker's tasks run in its child processes). In-process
events wake the scheduler when a task finishes and the worker when tasks are
released, so nobody waits for a polling interval.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from orchestrator.clock import Clock, SystemClock
from orchestrator.engine.processor import DagProcessor
from orchestrator.engine.scheduler import Scheduler
from orchestrator.engine.worker import Worker
from orchestrator.observability.alerts.delivery import start_alert_thread
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.db import upgrade

log = logging.getLogger(__name__)


def install_stop_handlers(stop: threading.Event) -> None:
    """SIGINT and SIGTERM set ``stop``: loops finish their tick and exit."""

    def handler(signum: int, _frame: Any) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def run_processor(
    processor: DagProcessor,
    clock: Clock,
    settings: Settings,
    stop: threading.Event,
    on_change: threading.Event | None = None,
) -> None:
    """Scan the dags folder every ``parse_interval`` seconds until ``stop``."""
    while not stop.is_set():
        try:
            result = processor.scan(clock.now(), stop=stop)
            if result.parsed:
                log.info(
                    "parsed %d file(s): %d DAG(s), %d import error(s), %d removed",
                    result.parsed,
                    result.dags,
                    result.errors,
                    result.removed,
                )
                if on_change is not None:
                    on_change.set()
        except Exception:
            log.exception("scanning the dags folder failed; retrying")
        stop.wait(settings.parse_interval)


def run_scheduler(
    store: Store, settings: Settings, stop: threading.Event, *, clock: Clock | None = None
) -> None:
    """A scheduler process: the DAG processor thread and the scheduler loop.

    On PostgreSQL it wakes when a worker NOTIFYs that a try finished, and NOTIFYs the
    workers when it released tasks; the leader lease is judged by the database clock.
    """
    from orchestrator.engine import wakeup

    clock = clock or SystemClock()
    store.db_clock = True
    wake = threading.Event()
    notifier = wakeup.Notifier(store.url)
    listener = wakeup.Listener(store.url, {wakeup.FINISHED: wake}).start()
    processor = DagProcessor(store, settings, on_stored=wake.set)  # wake per file, not per scan
    _thread("processor", run_processor, processor, clock, settings, stop, wake)
    start_alert_thread(store, clock, settings, stop)  # alerts never run in the tick
    scheduler = Scheduler(
        store, clock, settings, wake=wake, on_release=notifier.event(wakeup.TASKS)
    )
    try:
        scheduler.run_forever(stop)
    finally:
        listener.stop()
        notifier.close()


def run_worker(
    store: Store,
    settings: Settings,
    queues: tuple[str, ...],
    stop: threading.Event,
    *,
    clock: Clock | None = None,
) -> None:
    """A worker process; on PostgreSQL it wakes on NOTIFY when tasks are released."""
    from orchestrator.engine import wakeup

    wake = wakeup.WakeEvent()  # a busy worker waits on it together with its tasks
    notifier = wakeup.Notifier(store.url)
    listener = wakeup.Listener(store.url, {wakeup.TASKS: wake}).start()
    worker = Worker(
        store,
        clock or SystemClock(),
        settings,
        queues=queues,
        wake=wake,
        on_finish=notifier.event(wakeup.FINISHED),
    )
    try:
        worker.run_forever(stop)
    finally:
        listener.stop()
        notifier.close()


def _thread(name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
    t = threading.Thread(target=target, args=args, name=name, daemon=True)
    t.start()
    return t


def standalone(
    settings: Settings, *, clock: Clock | None = None, stop: threading.Event | None = None
) -> None:
    """Scheduler, worker, DAG processor and web UI in one command, on SQLite by default."""
    from webui import create_app
    from webui.server import serve

    clock = clock or SystemClock()
    stop = stop or threading.Event()
    upgrade(settings.database_url)
    store = Store(settings.database_url)
    store.db_clock = True
    from orchestrator.engine.wakeup import WakeEvent

    sched_wake, worker_wake = threading.Event(), WakeEvent()
    # the first scan runs in the processor thread beside the scheduler: a file that hangs
    # until parse_timeout holds back neither the other files' DAGs nor the scheduler
    processor = DagProcessor(store, settings, on_stored=sched_wake.set)
    scheduler = Scheduler(store, clock, settings, wake=sched_wake, on_release=worker_wake)
    worker = Worker(store, clock, settings, wake=worker_wake, on_finish=sched_wake)
    threads = [
        _thread("processor", run_processor, processor, clock, settings, stop, sched_wake),
        _thread("scheduler", scheduler.run_forever, stop),
        _thread("worker", worker.run_forever, stop),
    ]
    threads.append(start_alert_thread(store, clock, settings, stop))
    app = create_app(settings, store)

    def ready(url: str) -> None:
        print(
            f"orchestrator standalone: web UI at {url}\n"
            f"  database    {_safe_url(settings.database_url)}\n"
            f"  dags folder {settings.dags_folder}\n"
            f"  logs        {settings.log_dir}\n"
            "Press Ctrl-C to stop.",
            flush=True,
        )

    try:
        serve(app, settings.web_host, settings.web_port, stop, on_ready=ready)
    finally:
        stop.set()
        sched_wake.set()
        worker_wake.set()
        for t in threads:
            t.join(15)
        store.dispose()


def _safe_url(url: str) -> str:
    """The database URL without its password, for logs and banners."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001
        return "<unparsable URL>"
