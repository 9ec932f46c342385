"""``orchestrator dags ...``: list, parse, show, errors, pause, unpause, trigger, test,
versions; Airflow's names (list-runs, list-import-errors, state, next-execution) are in
``airflow_dags.py``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from orchestrator.cli.common import (
    Parents,
    bad_arguments_exit_2,
    cli_actor,
    emit,
    format_table,
    open_store,
    parse_json_object,
)
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    dags = sub.add_parser("dags", help="DAGs").add_subparsers(dest="action", required=True)
    parents.add(dags, "list", "list DAGs", json_output=True)
    parents.add(dags, "parse", "parse the dags folder now and store the result", json_output=True)
    p = parents.add(dags, "show", "show one DAG: schedule, policies, tasks", json_output=True)
    p.add_argument("dag_id")
    parents.add(dags, "errors", "list import errors", json_output=True)
    for action in ("pause", "unpause"):
        p = parents.add(dags, action, f"{action} a DAG")
        p.add_argument("dag_id")
    p = parents.add(dags, "trigger", "create a manual run now", json_output=True)
    p.add_argument("dag_id")
    _conf_and_date(p)
    p = parents.add(
        dags, "test", "run every task of one run here, on a throwaway store (the store untouched)"
    )
    p.add_argument("dag_id")
    p.add_argument(
        "date",
        nargs="?",
        default=None,
        metavar="LOGICAL_DATE",
        help="as --logical-date (Airflow's)",
    )
    _conf_and_date(p)
    from orchestrator.cli import airflow_dags  # issue 26: Airflow's names

    airflow_dags.register(dags, parents)
    from orchestrator.cli import dag_versions  # issue 17

    dag_versions.register(dags, parents)
    for choice in dags.choices.values():
        choice.set_defaults(handler=cmd_dags)
    from orchestrator.cli import port  # issue 26: dags port (its own handler)

    port.register(dags, parents)


def _conf_and_date(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--conf", default=None, help="JSON object of params, e.g. '{\"n\": 3}'")
    p.add_argument(
        "-l",
        "--logical-date",
        default=None,
        help="the run's logical date (DAG timezone unless an offset is given; default: now)",
    )


def cmd_dags(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.cli.airflow_dags import ACTIONS as AIRFLOW_ACTIONS
    from orchestrator.cli.airflow_dags import cmd_airflow_dags
    from orchestrator.engine.processor import DagProcessor

    if args.action == "test":  # issue 25: never opens the store
        return bad_arguments_exit_2(_dag_test, args, settings)
    store = open_store(settings)
    now = SystemClock().now()
    if args.action in AIRFLOW_ACTIONS:  # issue 26
        return cmd_airflow_dags(args, store, now)
    if args.action == "versions":
        from orchestrator.cli.dag_versions import cmd_versions

        return cmd_versions(args, store)
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
    if args.action in ("errors", "list-import-errors"):  # the second: Airflow's name
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
            "misfire_grace": spec.misfire_grace.total_seconds(),
            "catchup_window": (
                None if spec.catchup_window is None else spec.catchup_window.total_seconds()
            ),
            "overlap": spec.overlap,
            "max_active_runs": spec.max_active_runs,
            "params": spec.params,
            "param_schemas": {name: spec.param_schema(name) for name in spec.params},
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
                "misfire_grace",
                "catchup_window",
                "overlap",
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
        changed = store.set_paused(args.dag_id, args.action == "pause", now, who=cli_actor())
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
        when = None
        if args.logical_date is not None:
            from orchestrator.cli.schedule import parse_when

            when = parse_when(args.logical_date, dag.timezone, "--logical-date")
        run = store.trigger_run(
            args.dag_id, now, conf=conf, logical_date=when, triggered_by=cli_actor()
        )
        if args.json:
            emit(args, run.to_dict())
        else:
            print(f"created run {run.run_id} (state {run.state})")
            if dag.is_paused:
                print(f"DAG {args.dag_id} is paused: the run starts when it is unpaused")
        return 0
    raise AssertionError(args.action)


def _dag_test(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.dagtest import test_dag
    from orchestrator.engine.tasktest import find_dag, parse_date

    conf = parse_json_object(args.conf, "--conf")
    if args.date is not None and args.logical_date is not None:
        raise ConfigError("give the logical date once: as LOGICAL_DATE or as --logical-date")
    dag = find_dag(settings, args.dag_id)
    text = args.logical_date if args.date is None else args.date
    when = None if text is None else parse_date(text, dag.timezone)
    return test_dag(dag, settings, conf=conf, logical_date=when).exit_code
