"""``orchestrator tasks ...``: list, test, logs, clear, why, failed, retry."""

from __future__ import annotations

import argparse
import json
from typing import Any

from orchestrator.cli.common import (
    Parents,
    bad_arguments_exit_2,
    cli_actor,
    emit,
    open_store,
    parse_json_object,
    whole,
)
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError, NotFoundError, OrchestratorError
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    tasks = sub.add_parser("tasks", help="task instances").add_subparsers(
        dest="action", required=True
    )
    p = parents.add(
        tasks,
        "list",
        "list the task instances of a run; of a DAG: its task ids (Airflow's 'tasks list DAG')",
        json_output=True,
    )
    p.add_argument("run_id", metavar="RUN|DAG")
    p = parents.add(
        tasks, "test", "run one task in this process, without touching the store", json_output=True
    )
    p.add_argument("dag_id")
    p.add_argument("task_id")
    p.add_argument(
        "date",
        nargs="?",
        default=None,
        metavar="LOGICAL_DATE_OR_RUN_ID",
        help="Airflow's: a date, as --logical-date, or a run id of the DAG, as --from-run",
    )
    p.add_argument("--logical-date", default=None, help="ISO date or datetime (default: now)")
    p.add_argument("--params", default=None, help="JSON object merged over the DAG's params")
    p.add_argument(
        "--map-value",
        default=None,
        help="a mapped task: the JSON object of the one instance's mapped arguments, "
        'e.g. \'{"path": "part-1.csv"}\'',
    )
    _map_index(p, "a mapped task: which instance to run (default 0)")
    p.add_argument(
        "--upstream-result",
        action="append",
        type=upstream_result,
        default=[],
        metavar="TASK=JSON",
        help="what ctx.upstream(TASK) returns, e.g. extract='{\"rows\": 3}' (repeatable; "
        "over those of --from-run)",
    )
    p.add_argument(
        "--from-run",
        default=None,
        metavar="RUN_ID",
        help="read the upstream results (and the logical date and conf) from this stored run",
    )
    p = parents.add(tasks, "logs", "print a try's log", json_output=True)
    p.add_argument("run_id")
    p.add_argument("task_id")
    p.add_argument("--try", dest="try_number", type=whole(1), default=None, help="default: latest")
    _map_index(p, "a mapped task's instance (default: its first)")
    p.add_argument("--tail", type=_count, default=None, metavar="N", help="only the last N lines")
    p.add_argument(
        "--raw",
        action="store_true",
        help="print control characters as they are (default on a terminal: shown escaped)",
    )
    p.add_argument(
        "--follow", "-f", action="store_true", help="keep printing what a running try writes"
    )
    p = parents.add(
        tasks,
        "clear",
        "reset a finished task of a run so it runs again; 'tasks clear DAG -t REGEX -s S -e E' "
        "(Airflow's form): the matching tasks of every run in a date range, after a confirmation",
        json_output=True,
    )
    p.add_argument("run_id", metavar="RUN|DAG", help="a run (with TASK), or a DAG (Airflow's form)")
    p.add_argument("task_id", nargs="?", default=None, metavar="TASK")
    p.add_argument(
        "-d", "--downstream", action="store_true", help="also clear its downstream tasks"
    )
    _map_index(p, "clear only this instance of a mapped task (default: all, expanded again)")
    from orchestrator.cli.clear_runs import add_arguments as clear_runs_arguments  # issue 26

    clear_runs_arguments(p)
    p = parents.add(tasks, "why", "why is this task not running (yet)?", json_output=True)
    p.add_argument("run_id")
    p.add_argument("task_id")
    _map_index(p, "a mapped task's instance (default: its first)")
    p = parents.add(tasks, "failed", "list dead-lettered task instances", json_output=True)
    p.add_argument("dag_id", nargs="?", default=None)
    p.add_argument("--limit", type=whole(1), default=100)
    p = parents.add(  # issue 30
        tasks, "deferred", "list deferred task instances and their triggers", json_output=True
    )
    p.add_argument("dag_id", nargs="?", default=None)
    p.add_argument("--limit", type=whole(1), default=500)
    p = parents.add(tasks, "retry", "give a dead-lettered task one more set of tries")
    p.add_argument("run_id")
    p.add_argument("task_id")
    _map_index(p, "retry only this instance of a mapped task (default: every failed one)")
    for choice in tasks.choices.values():
        choice.set_defaults(handler=cmd_tasks)


def _map_index(p: Any, text: str) -> None:
    p.add_argument("--map-index", type=whole(0), default=None, metavar="N", help=text)


def upstream_result(text: str) -> tuple[str, str]:
    """An argparse type: ``TASK=JSON`` (any JSON value), else a usage error (exit 2)."""
    task_id, sep, value = text.partition("=")
    if not sep or not task_id:
        raise argparse.ArgumentTypeError(f"expected TASK=JSON, e.g. extract='[1, 2]', got {text!r}")
    try:
        json.loads(value)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"{task_id}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    return task_id, value


def cmd_tasks(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "test":
        return bad_arguments_exit_2(_task_test, args, settings)
    store = open_store(settings)
    if args.action in ("why", "failed", "retry"):
        return _dead_letters_and_why(args, settings, store)
    if args.action == "deferred":  # issue 30
        rows = [d.to_dict() for d in store.deferred_instances(dag_id=args.dag_id, limit=args.limit)]
        cols = ("dag_id", "run_id", "task_id", "map_index", "try_number", "trigger_id",
                "classpath", "since", "timeout_at", "triggerer_id")  # fmt: skip
        emit(args, rows, rows, cols)
        return 0
    if args.action == "list":
        if _names_a_dag(store, args.run_id):  # issue 26: Airflow's 'tasks list DAG'
            spec = store.current_spec(args.run_id)
            rows = [{"task_id": t.task_id, "kind": t.kind} for t in spec.tasks.values()]
            emit(args, rows if args.json else "\n".join(r["task_id"] for r in rows))
            return 0
        tis = [t.to_dict() for t in store.task_instances(args.run_id)]
        emit(
            args,
            tis,
            tis,
            (
                "task_id",
                "map_index",
                "state",
                "try_number",
                "max_tries",
                "start_date",
                "end_date",
                "owner",
            ),  # fmt: skip
        )
        return 0
    if args.action == "logs":
        from orchestrator.cli.task_logs import show_try_log

        return show_try_log(args, settings, store)
    if args.action == "clear":
        from orchestrator.cli.clear_runs import clear_across_runs, refuse_airflow_flags

        if args.task_id is None:  # issue 26: Airflow's 'tasks clear DAG -t ...'
            return clear_across_runs(args, store, SystemClock().now())
        refuse_airflow_flags(args)
        cleared = store.clear_task(
            args.run_id,
            args.task_id,
            SystemClock().now(),
            downstream=args.downstream,
            who=cli_actor(),
            map_index=args.map_index,
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


def _task_test(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.engine.tasktest import run_task_test

    when, from_run = args.logical_date, args.from_run
    if args.date is not None and args.date.startswith(f"{args.dag_id}__"):
        if from_run is not None:  # Airflow 3's [LOGICAL_DATE_OR_RUN_ID]: a run of the DAG
            raise ConfigError("give the run once: as LOGICAL_DATE_OR_RUN_ID or as --from-run")
        from_run = args.date
    elif args.date is not None:
        if when is not None:
            raise ConfigError("give the logical date once: as LOGICAL_DATE or as --logical-date")
        when = args.date
    params = parse_json_object(args.params, "--params")
    value = parse_json_object(args.map_value, "--map-value") if args.map_value is not None else None
    try:  # variables and connections from the database, when there is one
        found = open_store(settings)
    except OrchestratorError:
        if from_run is not None:
            raise
        found = None
    return run_task_test(
        settings, args.dag_id, args.task_id, when, params, found,
        map_index=args.map_index, map_value=value,
        upstream_results=dict(args.upstream_result), from_run=from_run,
    )  # fmt: skip


def _names_a_dag(store: Any, name: str) -> bool:
    """Whether ``tasks list NAME`` names a DAG (Airflow's form) rather than a run (ours).
    A name that is both, or neither, is an error naming both readings."""
    is_run, is_dag = _exists(store.get_run, name), _exists(store.get_dag, name)
    if is_run and is_dag:
        raise ConfigError(
            f"{name!r} is both a run and a DAG: see 'orchestrator runs show {name}' for the "
            f"run's task instances, 'orchestrator dags show {name}' for the DAG's tasks"
        )
    if not is_run and not is_dag:
        raise NotFoundError(f"no run with run_id {name!r} and no DAG with dag_id {name!r}")
    return is_dag


def _exists(get: Any, name: str) -> bool:
    try:
        get(name)
    except NotFoundError:
        return False
    return True


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of lines >= 0, got {text!r}")
    return value


def _dead_letters_and_why(args: argparse.Namespace, settings: Settings, store: Any) -> int:
    from datetime import timedelta

    from orchestrator.scheduling.explain import explain_task

    now = SystemClock().now()
    if args.action == "why":
        stale = timedelta(seconds=settings.lease_seconds)
        facts = store.task_facts(
            args.run_id, args.task_id, now, worker_stale_after=stale, map_index=args.map_index
        )
        reasons = explain_task(facts)
        if args.json:
            emit(args, {"run_id": args.run_id, "task_id": args.task_id,
                        "map_index": facts.map_index,
                        "state": facts.task_state, "reasons": [r.to_dict() for r in reasons]})  # fmt: skip
        else:
            label = args.task_id + (f"[{facts.map_index}]" if facts.map_index >= 0 else "")
            print(f"{label} in {args.run_id} is {facts.task_state}:")
            for reason in reasons:
                print(f"  - [{reason.code}] {reason.message}")
        return 0
    if args.action == "failed":
        rows = [
            t.to_dict() | {"last_error": (t.error or "").strip().splitlines()[-1:] or [""]}
            for t in store.dead_letters(args.dag_id, limit=args.limit)
        ]
        for row in rows:
            row["last_error"] = row["last_error"][0][:120]
        emit(
            args,
            rows,
            rows,
            ("dag_id", "run_id", "task_id", "try_number", "end_date", "last_error"),
        )
        return 0
    reset = store.retry_dead_letter(
        args.run_id, args.task_id, now, who=cli_actor(), map_index=args.map_index
    )
    print(f"retrying {args.task_id} in {args.run_id}; reset {', '.join(reset)}")
    return 0
