"""Long-running commands: standalone, db upgrade, scheduler, worker, webserver."""

from __future__ import annotations

import argparse
import threading
from typing import Any

from orchestrator.cli.common import Parents, open_store
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    p = parents.add(
        sub, "standalone", "run scheduler, worker, DAG processor and web UI in one process"
    )
    p.add_argument("--host", default=None, help="web UI address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="web UI port (default 8080)")
    p.add_argument("--concurrency", type=int, default=None, help="task processes")
    p.set_defaults(handler=cmd_standalone, long_running=True)

    db = sub.add_parser("db", help="the metadata database").add_subparsers(
        dest="action", required=True
    )
    parents.add(db, "upgrade", "create or migrate the schema to the latest version").set_defaults(
        handler=cmd_db
    )

    p = parents.add(sub, "scheduler", "run a scheduler (and the DAG processor) until stopped")
    p.set_defaults(handler=cmd_scheduler, long_running=True)
    p = parents.add(sub, "worker", "run a worker until stopped")
    p.add_argument("--concurrency", type=int, default=None, help="task processes")
    p.add_argument("--queues", default="default", help="comma-separated queues (default: default)")
    p.set_defaults(handler=cmd_worker, long_running=True)
    p = parents.add(sub, "webserver", "serve the web UI")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)
    p.set_defaults(handler=cmd_webserver, long_running=True)


def cmd_standalone(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.services import install_stop_handlers, standalone

    stop = threading.Event()
    install_stop_handlers(stop)
    standalone(settings, stop=stop)
    return 0


def cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.services import _safe_url
    from orchestrator.store.db import upgrade

    upgrade(settings.database_url)
    print(f"database {_safe_url(settings.database_url)} is at the latest schema version")
    return 0


def cmd_scheduler(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.processor import DagProcessor
    from orchestrator.scheduler import Scheduler
    from orchestrator.services import install_stop_handlers, run_processor

    store = open_store(settings)
    clock = SystemClock()
    stop = threading.Event()
    install_stop_handlers(stop)
    wake = threading.Event()
    processor = DagProcessor(store, settings)
    threading.Thread(
        target=run_processor, args=(processor, clock, settings, stop, wake), daemon=True
    ).start()
    Scheduler(store, clock, settings, wake=wake).run_forever(stop)
    return 0


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.services import install_stop_handlers
    from orchestrator.worker import Worker

    store = open_store(settings)
    queues = tuple(q.strip() for q in args.queues.split(",") if q.strip())
    if not queues:
        raise ConfigError("--queues: give at least one queue name")
    stop = threading.Event()
    install_stop_handlers(stop)
    Worker(store, SystemClock(), settings, queues=queues).run_forever(stop)
    return 0


def cmd_webserver(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.services import install_stop_handlers
    from webui import create_app
    from webui.server import serve

    store = open_store(settings)
    stop = threading.Event()
    install_stop_handlers(stop)
    serve(
        create_app(settings, store),
        settings.web_host,
        settings.web_port,
        stop,
        on_ready=lambda url: print(f"web UI at {url}", flush=True),
    )
    return 0
