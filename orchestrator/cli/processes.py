"""Long-running commands: standalone, db upgrade, scheduler, worker, triggerer,
webserver."""

from __future__ import annotations

import argparse
import os
import threading
from typing import Any

from orchestrator.cli.common import Parents, emit, open_store, whole
from orchestrator.errors import ConfigError
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    p = parents.add(
        sub, "standalone", "run scheduler, worker, DAG processor and web UI in one process"
    )
    p.add_argument("--host", default=None, help="web UI address (default 127.0.0.1)")
    p.add_argument("--port", type=whole(1, 65535), default=None, help="web UI port (default 8080)")
    p.add_argument("--concurrency", type=whole(1, 4096), default=None, help="task processes")
    p.add_argument(
        "--new-database",
        action="store_true",
        help="start an empty database even where the state folder records that one existed",
    )
    _task_user_flags(p)
    p.set_defaults(handler=cmd_standalone, long_running=True)

    db = sub.add_parser("db", help="the metadata database").add_subparsers(
        dest="action", required=True
    )
    parents.add(db, "upgrade", "create or migrate the schema to the latest version").set_defaults(
        handler=cmd_db
    )
    parents.add(
        db, "init", "create a new, empty database (also where a lost one was recorded)"
    ).set_defaults(handler=cmd_db_init)
    p = parents.add(db, "clean", "delete finished runs older than an age, logs included",
                    json_output=True)  # fmt: skip
    p.add_argument("--older-than", required=True, help="age like 90d, 12h, 4w")
    p.add_argument("--dry-run", action="store_true", help="only count what would go")
    p.add_argument("--batch", type=whole(1), default=500, help="runs deleted per transaction")
    p.set_defaults(handler=cmd_db_clean)

    p = parents.add(sub, "scheduler", "run a scheduler (and the DAG processor) until stopped")
    p.set_defaults(handler=cmd_scheduler, long_running=True)
    p = parents.add(sub, "worker", "run a worker until stopped")
    p.add_argument("--concurrency", type=whole(1, 4096), default=None, help="task processes")
    p.add_argument("--queues", default="default", help="comma-separated queues (default: default)")
    _task_user_flags(p)
    p.set_defaults(handler=cmd_worker, long_running=True)
    p = parents.add(
        sub, "triggerer", "run a triggerer (deferred tasks' triggers, asset watchers) until stopped"
    )
    p.add_argument(
        "--capacity", type=whole(1, 1_000_000), default=None,
        help="most triggers it runs at once (default: triggerer_capacity, 10000)",
    )  # fmt: skip
    p.set_defaults(handler=cmd_triggerer, long_running=True)
    p = parents.add(sub, "webserver", "serve the web UI")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=whole(1, 65535), default=None)
    p.set_defaults(handler=cmd_webserver, long_running=True)


def _task_user_flags(p: Any) -> None:
    """issue 24: who tasks run as (engine/task_user.py)."""
    p.add_argument("--task-user", default=None, help="OS user task processes run as")
    p.add_argument(
        "--allow-root-tasks", action="store_true", default=None,
        help="run tasks as root when this runs as root without a task user",
    )  # fmt: skip


def cmd_standalone(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.services import (
        exit_without_collecting,
        install_stop_handlers,
        standalone,
    )

    stop = threading.Event()
    install_stop_handlers(stop)
    standalone(settings, stop=stop, new_database=args.new_database)
    exit_without_collecting()
    return 0


def cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.services import _safe_url, prepare_database

    prepare_database(settings)
    print(f"database {_safe_url(settings.database_url)} is at the latest schema version")
    return 0


def cmd_db_init(args: argparse.Namespace, settings: Settings) -> int:
    """A new database; refused where one with a schema already is (that is 'upgrade')."""
    from orchestrator.engine.services import _safe_url, prepare_database
    from orchestrator.store.core.db import has_schema, make_engine
    from orchestrator.store.core.identity import sqlite_path

    path = sqlite_path(settings.database_url)
    if path is None or os.path.exists(path):
        engine = make_engine(settings.database_url)
        try:
            present = has_schema(engine)
        finally:
            engine.dispose()
        if present:
            raise ConfigError(
                f"database {_safe_url(settings.database_url)} already exists: "
                "'orchestrator db upgrade' migrates it; delete it first to start over"
            )
    prepare_database(settings, new_database=True)
    print(f"created a new database {_safe_url(settings.database_url)}")
    return 0


def cmd_db_clean(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.clock import SystemClock
    from orchestrator.observability.retention import clean, parse_age

    age = parse_age(args.older_than)
    store = open_store(settings)
    counts = clean(store, settings.log_dir, SystemClock().now(), age, dry_run=args.dry_run,
                   batch=args.batch)  # fmt: skip
    if args.json:
        emit(args, counts | {"dry_run": args.dry_run})
    else:
        verb = "would delete" if args.dry_run else "deleted"
        print(f"{verb}: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items()))
    return 0


def cmd_scheduler(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.services import (
        exit_without_collecting,
        install_stop_handlers,
        run_scheduler,
    )

    store = open_store(settings)
    stop = threading.Event()
    install_stop_handlers(stop)
    run_scheduler(store, settings, stop)
    exit_without_collecting()
    return 0


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.services import install_stop_handlers, run_worker
    from orchestrator.engine.task_user import check_task_user

    check_task_user(settings)  # issue 24: before anything opens or starts
    store = open_store(settings)
    queues = tuple(q.strip() for q in args.queues.split(",") if q.strip())
    if not queues:
        raise ConfigError("--queues: give at least one queue name")
    stop = threading.Event()
    install_stop_handlers(stop)
    run_worker(store, settings, queues, stop)
    return 0


def cmd_triggerer(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.services import install_stop_handlers, run_triggerer

    store = open_store(settings)
    stop = threading.Event()
    install_stop_handlers(stop)
    run_triggerer(store, settings, stop, capacity=args.capacity)
    return 0


def cmd_webserver(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.secrets_chain import check_key
    from orchestrator.engine.services import install_stop_handlers, web_ui
    from orchestrator.engine.task_user import protect_this_process

    create_app, serve = web_ui().create_app, web_ui("server").serve
    store = open_store(settings)
    check_key(store, settings)  # a wrong secrets key refuses to start
    protect_this_process()  # issue 24: /proc/<pid> is root's (engine/task_user.py)
    stop = threading.Event()
    install_stop_handlers(stop)
    serve(
        create_app(settings, store),
        settings.web_host,
        settings.web_port,
        stop,
        threads=settings.web_threads,
        on_ready=lambda url: print(f"web UI at {url}", flush=True),
    )
    return 0
