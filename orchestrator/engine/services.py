"""Long-running services and how ``standalone`` wires them together in one process.

``standalone`` runs the DAG processor, the scheduler, a worker and the web UI as
threads of one process (the worker's tasks run in its child processes). In-process
events wake the scheduler when a task finishes and the worker when tasks are
released, so nobody waits for a polling interval.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from orchestrator.clock import Clock, SystemClock
from orchestrator.engine.processor import DagProcessor
from orchestrator.engine.scheduler import Scheduler
from orchestrator.engine.secrets_chain import check_key
from orchestrator.engine.start_environ import hide_start_environment
from orchestrator.engine.task_user import check_task_user, protect_this_process
from orchestrator.engine.worker import Worker
from orchestrator.errors import ConfigError
from orchestrator.observability.alerts.delivery import start_alert_thread
from orchestrator.settings import Settings
from orchestrator.state_folder import tighten
from orchestrator.store import Store
from orchestrator.store.core.db import bounded_wait_ended, upgrade
from orchestrator.store.core.identity import record_database, refuse_lost_database
from orchestrator.store.credentials.secret_box import box_of

log = logging.getLogger(__name__)

_PACKAGE = Path(__file__).resolve().parents[1]  # the orchestrator package folder


def web_ui(module: str = "") -> ModuleType:
    """The web UI package (or one of its modules), whatever the install.

    A wheel installs it inside this package as ``orchestrator.webui``; a checkout has
    ``webui/`` beside ``orchestrator/`` and imports it as ``webui`` (as the tests do).
    The one whose files sit beside this package wins, never another install's copy.
    """
    for name in ("webui", "orchestrator.webui"):
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            continue
        if spec is None or spec.origin is None:
            continue
        if Path(spec.origin).resolve().parent in (_PACKAGE / "webui", _PACKAGE.parent / "webui"):
            return importlib.import_module(f"{name}.{module}" if module else name)
    raise ModuleNotFoundError(f"the web UI package is not installed beside {_PACKAGE}")


def exit_without_collecting() -> None:
    """Before a long-running process returns from its loop: leave its objects (the
    DAG specs of 10,000 DAGs, caches) to the exit instead of a last garbage collection,
    which took a second and more of a SIGTERM's budget (issue 29: stop within 2 s)."""
    gc.freeze()


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
    """Scan the dags folder every ``parse_interval`` seconds until ``stop``; a scan
    that failed (the database refused a write) is tried again after a second."""
    while not stop.is_set():
        pause = settings.parse_interval
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
        except Exception as exc:
            if bounded_wait_ended(exc):
                log.warning("scanning the dags folder: %s; retrying", str(exc).splitlines()[0])
            else:
                log.exception("scanning the dags folder failed; retrying")
            pause = min(pause, 1.0)
        stop.wait(pause)


def run_scheduler(
    store: Store, settings: Settings, stop: threading.Event, *, clock: Clock | None = None
) -> None:
    """A scheduler process: the DAG processor thread and the scheduler loop.

    On PostgreSQL it wakes when a worker NOTIFYs that a try finished, and NOTIFYs the
    workers when it released tasks; the leader lease is judged by the database clock.
    """
    from orchestrator.engine import wakeup

    hide_start_environment()  # before any thread: engine/start_environ.py
    protect_this_process()  # issue 24: /proc/<pid> is root's (engine/task_user.py)
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

    hide_start_environment()  # before any thread: engine/start_environ.py
    check_task_user(settings)  # issue 24: never tasks as root unasked
    protect_this_process()
    check_key(store, settings)  # a wrong secrets key refuses to start
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


def run_triggerer(
    store: Store,
    settings: Settings,
    stop: threading.Event,
    *,
    clock: Clock | None = None,
    capacity: int | None = None,
) -> None:
    """A triggerer process (issue 30); on PostgreSQL it NOTIFYs the workers when a
    trigger's event queued its task, and the schedulers when a trigger failed one."""
    from orchestrator.engine import wakeup
    from orchestrator.engine.triggerer import Triggerer

    hide_start_environment()  # before any thread: engine/start_environ.py
    notifier = wakeup.Notifier(store.url)
    triggerer = Triggerer(
        store,
        clock or SystemClock(),
        settings,
        capacity=capacity,
        on_fire=notifier.event(wakeup.TASKS),
        on_finish=notifier.event(wakeup.FINISHED),
    )
    try:
        triggerer.run_forever(stop)
    finally:
        notifier.close()


def _thread(name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
    t = threading.Thread(target=target, args=args, name=name, daemon=True)
    t.start()
    return t


def check_login_possible(settings: Settings) -> None:
    """Refuse (ConfigError) a web UI that will need a login while the database holds no
    user: bound to a non-loopback ``web_host`` or with ``web_login=always``. Asked before
    anything is migrated, created or started; the database is only read, if it exists."""
    from orchestrator.store.access.user_store import users_before_migrating

    if settings.web_login != "always" and web_ui("security").is_loopback(settings.web_host):
        return
    if users_before_migrating(settings.database_url) == 0:
        raise ConfigError(
            f"the web UI on {settings.web_host} requires a login, and there is no user yet: "
            "run 'orchestrator db upgrade' and 'orchestrator users add NAME' first, or bind "
            "127.0.0.1; nothing was started or migrated"
        )


def prepare_database(settings: Settings, *, new_database: bool = False) -> None:
    """Create or migrate the schema, refusing to create a new SQLite database where the
    state folder records that one existed (unless ``new_database``), and record it.
    The state folder is made the orchestrator user's alone first (``state_folder``)."""
    tighten(settings.state_dir)  # issue 24: a folder others could read, with a warning
    if not new_database:
        refuse_lost_database(settings.state_dir, settings.database_url)
    upgrade(settings.database_url)
    record_database(settings.state_dir, settings.database_url, created=new_database)
    box_of(settings)  # issue 16: the secrets key file, made once (unless a key is set)
    tighten(settings.state_dir, quiet=True)  # what was just made (the umask of a caller)


def standalone(
    settings: Settings,
    *,
    clock: Clock | None = None,
    stop: threading.Event | None = None,
    new_database: bool = False,
) -> None:
    """Scheduler, worker, DAG processor and web UI in one command, on SQLite by default.

    A SQLite file the state folder knows of but that is missing stops it with an error
    (``new_database`` starts an empty one instead).
    """
    create_app, serve = web_ui().create_app, web_ui("server").serve
    check_login_possible(settings)  # before the database is migrated or a thread starts
    hide_start_environment()  # before any thread: engine/start_environ.py
    check_task_user(settings, "standalone")  # issue 24: never tasks as root unasked
    protect_this_process()
    clock = clock or SystemClock()
    stop = stop or threading.Event()
    prepare_database(settings, new_database=new_database)
    store = Store(settings.database_url, settings=settings)
    store.db_clock = True
    try:
        check_key(store, settings)  # a wrong secrets key refuses to start
    except Exception:
        store.dispose()
        raise
    from orchestrator.engine.wakeup import WakeEvent

    sched_wake, worker_wake = threading.Event(), WakeEvent()
    # the first scan runs in the processor thread beside the scheduler: a file that hangs
    # until parse_timeout holds back neither the other files' DAGs nor the scheduler
    processor = DagProcessor(store, settings, on_stored=sched_wake.set)
    scheduler = Scheduler(store, clock, settings, wake=sched_wake, on_release=worker_wake)
    worker = Worker(store, clock, settings, wake=worker_wake, on_finish=sched_wake)
    from orchestrator.engine.triggerer import Triggerer

    # issue 30: deferred tasks' triggers and asset watchers, in a thread of their own
    triggerer = Triggerer(store, clock, settings, on_fire=worker_wake, on_finish=sched_wake)
    threads = [
        _thread("triggerer", triggerer.run_forever, stop),
        _thread("processor", run_processor, processor, clock, settings, stop, sched_wake),
        _thread("scheduler", scheduler.run_forever, stop),
        _thread("worker", worker.run_forever, stop),
    ]
    threads.append(start_alert_thread(store, clock, settings, stop))
    app = create_app(settings, store, wake_scheduler=sched_wake)  # a webhook's asset event

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
        serve(
            app,
            settings.web_host,
            settings.web_port,
            stop,
            threads=settings.web_threads,
            on_ready=ready,
        )
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
