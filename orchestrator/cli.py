"""The ``orchestrator`` command line.

Exit status 0 on success; 1 with a one-line ``orchestrator: error: ...`` on bad input
or a failed operation; 2 on a usage error. Every list/show command takes ``--json``,
whose fields use the store's names (dag_id, run_id, logical_date, state, ...).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DBAPIError

from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError, NotFoundError, OrchestratorError
from orchestrator.settings import FIELDS, Settings

log = logging.getLogger("orchestrator")
_opened: list[Any] = []  # stores opened by this command, disposed when it ends


# -- parser ------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    for name in ("database_url", "dags_folder", "state_dir", "lease_seconds", "heartbeat_seconds"):
        common.add_argument(
            f"--{name.replace('_', '-')}", dest=name, default=None, help=FIELDS[name][2]
        )
    common.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON")

    parser = argparse.ArgumentParser(
        prog="orchestrator",
        description="A DAG workflow orchestrator and job scheduler.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        parent: Any, name: str, help_: str, *parents: argparse.ArgumentParser
    ) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help_, description=help_, parents=[common, *parents])

    p = add(sub, "standalone", "run scheduler, worker, DAG processor and web UI in one process")
    p.add_argument("--host", default=None, help="web UI address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="web UI port (default 8080)")
    p.add_argument("--concurrency", type=int, default=None, help="task processes")

    db = sub.add_parser("db", help="the metadata database").add_subparsers(
        dest="action", required=True
    )
    add(db, "upgrade", "create or migrate the schema to the latest version")

    add(sub, "scheduler", "run a scheduler (and the DAG processor) until stopped")
    p = add(sub, "worker", "run a worker until stopped")
    p.add_argument("--concurrency", type=int, default=None, help="task processes")
    p.add_argument("--queues", default="default", help="comma-separated queues (default: default)")
    p = add(sub, "webserver", "serve the web UI")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)

    dags = sub.add_parser("dags", help="DAGs").add_subparsers(dest="action", required=True)
    add(dags, "list", "list DAGs", as_json)
    add(dags, "parse", "parse the dags folder now and store the result", as_json)
    p = add(dags, "show", "show one DAG: schedule, policies, tasks", as_json)
    p.add_argument("dag_id")
    add(dags, "errors", "list import errors", as_json)
    for action in ("pause", "unpause"):
        p = add(dags, action, f"{action} a DAG")
        p.add_argument("dag_id")
    p = add(dags, "trigger", "create a manual run now", as_json)
    p.add_argument("dag_id")
    p.add_argument("--conf", default=None, help="JSON object of params, e.g. '{\"n\": 3}'")

    runs = sub.add_parser("runs", help="DAG runs").add_subparsers(dest="action", required=True)
    p = add(runs, "list", "list runs, newest first", as_json)
    p.add_argument("dag_id", nargs="?")
    p.add_argument("--state", default=None)
    p.add_argument("--limit", type=int, default=50)
    p = add(runs, "show", "show a run and its task instances", as_json)
    p.add_argument("run_id")

    tasks = sub.add_parser("tasks", help="task instances").add_subparsers(
        dest="action", required=True
    )
    p = add(tasks, "list", "list the task instances of a run", as_json)
    p.add_argument("run_id")
    p = add(tasks, "test", "run one task in this process, without touching the store", as_json)
    p.add_argument("dag_id")
    p.add_argument("task_id")
    p.add_argument("--logical-date", default=None, help="ISO date or datetime (default: now)")
    p.add_argument("--params", default=None, help="JSON object merged over the DAG's params")
    p = add(tasks, "logs", "print a try's log", as_json)
    p.add_argument("run_id")
    p.add_argument("task_id")
    p.add_argument("--try", dest="try_number", type=int, default=None, help="default: latest")
    p = add(tasks, "clear", "reset a finished task so it runs again", as_json)
    p.add_argument("run_id")
    p.add_argument("task_id")
    p.add_argument("--downstream", action="store_true", help="also clear its downstream tasks")
    return parser


# -- helpers -----------------------------------------------------------------------------
def load_settings(args: argparse.Namespace) -> Settings:
    overrides = {
        name: getattr(args, name, None)
        for name in (
            "database_url",
            "dags_folder",
            "state_dir",
            "lease_seconds",
            "heartbeat_seconds",
        )
    }
    if getattr(args, "host", None):
        overrides["web_host"] = args.host
    if getattr(args, "port", None):
        overrides["web_port"] = args.port
    if getattr(args, "concurrency", None):
        overrides["worker_concurrency"] = args.concurrency
    return Settings.load(**overrides)


def open_store(settings: Settings) -> Any:
    from sqlalchemy import inspect

    from orchestrator.store import Store

    store = Store(settings.database_url)
    _opened.append(store)
    try:
        present = inspect(store.engine).has_table("dag_runs")
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot reach the database: {str(exc).splitlines()[0]}") from None
    if not present:
        raise ConfigError("the database has no schema yet: run 'orchestrator db upgrade' first")
    return store


def emit(
    args: argparse.Namespace,
    data: Any,
    table: list[dict[str, Any]] | None = None,
    columns: Sequence[str] = (),
) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, default=str))
        return
    if table is None:
        print(data if isinstance(data, str) else json.dumps(data, indent=2, default=str))
        return
    print(format_table(table, columns))


def format_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, datetime):
            return v.isoformat(timespec="seconds")
        if isinstance(v, bool):
            return "yes" if v else "no"
        return str(v)

    body = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)).rstrip() for b in body]
    if not rows:
        lines.append("(none)")
    return "\n".join(lines)


def parse_json_object(text: str | None, flag: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{flag}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(
            f"{flag}: expected a JSON object like '{{\"key\": 1}}', got {type(value).__name__}"
        )
    return value


# -- commands ----------------------------------------------------------------------------
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


def cmd_dags(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.processor import DagProcessor

    store = open_store(settings)
    now = SystemClock().now()
    if args.action == "parse":
        result = DagProcessor(store, settings).scan(now, force=True)
        emit(
            args,
            result.__dict__
            if args.json
            else (
                f"parsed {result.parsed} file(s): {result.dags} DAG(s), {result.errors} import error(s)"
            ),
        )
        return 1 if result.errors else 0
    if args.action == "list":
        dags = [d.to_dict() for d in store.list_dags()]
        emit(args, dags, dags, ("dag_id", "schedule", "is_paused", "next_logical_date", "fileloc"))
        errors = store.import_errors()
        if errors and not args.json:
            print(
                f"\n{len(errors)} import error(s): see 'orchestrator dags errors'", file=sys.stderr
            )
        return 0
    if args.action == "errors":
        errors = [e.to_dict() for e in store.import_errors()]
        if args.json:
            emit(args, errors)
        elif not errors:
            print("no import errors")
        else:
            for e in errors:
                print(f"{e['fileloc']}\n  {e['message']}\n")
        return 0
    if args.action == "show":
        dag = store.get_dag(args.dag_id)
        spec = store.spec(dag.dag_id, dag.version_hash)
        data = dag.to_dict() | {
            "misfire": spec.misfire,
            "max_active_runs": spec.max_active_runs,
            "params": spec.params,
            "tasks": [
                {
                    "task_id": t.task_id,
                    "kind": t.kind,
                    "upstream": list(t.upstream),
                    "retries": t.retries,
                    "trigger_rule": t.trigger_rule,
                    "queue": t.queue,
                }
                for t in spec.tasks.values()
            ],
        }
        if args.json:
            emit(args, data)
        else:
            for key in (
                "dag_id",
                "description",
                "fileloc",
                "schedule",
                "timezone",
                "is_paused",
                "next_logical_date",
                "misfire",
                "max_active_runs",
                "params",
            ):
                print(f"{key:18} {data[key]}")
            print()
            print(
                format_table(
                    data["tasks"], ("task_id", "kind", "upstream", "retries", "trigger_rule")
                )
            )
        return 0
    if args.action in ("pause", "unpause"):
        changed = store.set_paused(args.dag_id, args.action == "pause", now)
        print(
            f"DAG {args.dag_id} {'paused' if args.action == 'pause' else 'unpaused'}"
            + ("" if changed else " (it already was)")
        )
        return 0
    if args.action == "trigger":
        conf = parse_json_object(args.conf, "--conf")
        dag = store.get_dag(args.dag_id)
        if not dag.is_active:
            raise NotFoundError(
                f"DAG {args.dag_id!r} is no longer defined ({dag.fileloc} was deleted or changed)"
            )
        run = store.trigger_run(args.dag_id, now, conf=conf)
        if args.json:
            emit(args, run.to_dict())
        else:
            print(f"created run {run.run_id} (state {run.state})")
            if dag.is_paused:
                print(f"DAG {args.dag_id} is paused: the run starts when it is unpaused")
        return 0
    raise AssertionError(args.action)


def cmd_runs(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    if args.action == "list":
        if args.dag_id:
            store.get_dag(args.dag_id)
        runs = [r.to_dict() for r in store.list_runs(args.dag_id, args.state, args.limit)]
        emit(
            args,
            runs,
            runs,
            ("run_id", "dag_id", "run_type", "logical_date", "state", "start_date", "end_date"),
        )
        return 0
    run = store.get_run(args.run_id)
    tis = [t.to_dict() for t in store.task_instances(run.run_id)]
    if args.json:
        emit(args, run.to_dict() | {"task_instances": tis})
    else:
        for key, value in run.to_dict().items():
            print(f"{key:20} {value}")
        print()
        print(format_table(tis, ("task_id", "state", "try_number", "start_date", "end_date")))
    return 0


def cmd_tasks(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "test":
        from orchestrator.tasktest import run_task_test

        params = parse_json_object(args.params, "--params")
        return run_task_test(settings, args.dag_id, args.task_id, args.logical_date, params)
    store = open_store(settings)
    if args.action == "list":
        store.get_run(args.run_id)
        tis = [t.to_dict() for t in store.task_instances(args.run_id)]
        emit(
            args,
            tis,
            tis,
            ("task_id", "state", "try_number", "max_tries", "start_date", "end_date", "owner"),
        )
        return 0
    if args.action == "logs":
        store.task_instance(args.run_id, args.task_id)
        tries = store.tries(args.run_id, args.task_id)
        if not tries:
            raise NotFoundError(f"task {args.task_id!r} of run {args.run_id!r} has not started yet")
        chosen = (
            tries[-1]
            if args.try_number is None
            else next((t for t in tries if t.try_number == args.try_number), None)
        )
        if chosen is None:
            raise NotFoundError(
                f"task {args.task_id!r} has no try {args.try_number} (tries: 1..{tries[-1].try_number})"
            )
        path = Path(settings.log_dir) / (chosen.log_path or "")
        text = path.read_text(errors="replace") if path.is_file() else ""
        if args.json:
            emit(args, chosen.to_dict() | {"log": text})
        else:
            sys.stdout.write(text or f"(no log at {path})\n")
        return 0
    if args.action == "clear":
        cleared = store.clear_task(
            args.run_id, args.task_id, SystemClock().now(), downstream=args.downstream
        )
        if args.json:
            emit(args, {"run_id": args.run_id, "cleared": cleared})
        else:
            print(
                f"cleared {', '.join(cleared)}"
                if cleared
                else "nothing to clear: the task is not finished"
            )
        return 0
    raise AssertionError(args.action)


COMMANDS = {
    "standalone": cmd_standalone,
    "db": cmd_db,
    "scheduler": cmd_scheduler,
    "worker": cmd_worker,
    "webserver": cmd_webserver,
    "dags": cmd_dags,
    "runs": cmd_runs,
    "tasks": cmd_tasks,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = (args.log_level or "INFO").upper()
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command not in ("standalone", "scheduler", "worker", "webserver"):
        logging.getLogger().setLevel(logging.WARNING if not args.log_level else level)
    try:
        settings = load_settings(args)
        return COMMANDS[args.command](args, settings)
    except OrchestratorError as exc:
        print(f"orchestrator: error: {exc}", file=sys.stderr)
        return 1
    except DBAPIError as exc:
        print(f"orchestrator: error: database: {str(exc.orig).splitlines()[0]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        while _opened:
            _opened.pop().dispose()
