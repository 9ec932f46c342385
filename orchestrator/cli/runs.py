"""``orchestrator runs ...``: list and show DAG runs."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.common import Parents, emit, format_table, open_store, whole
from orchestrator.settings import Settings
from orchestrator.states import RunState


def register(sub: Any, parents: Parents) -> None:
    runs = sub.add_parser("runs", help="DAG runs").add_subparsers(dest="action", required=True)
    p = parents.add(runs, "list", "list runs, newest first", json_output=True)
    p.add_argument("dag_id", nargs="?")
    run_filters(p)
    p = parents.add(runs, "show", "show a run and its task instances", json_output=True)
    p.add_argument("run_id")
    for choice in runs.choices.values():
        choice.set_defaults(handler=cmd_runs)


def run_filters(p: argparse.ArgumentParser) -> None:
    """``--state`` and ``--limit`` of ``runs list`` (and ``dags list-runs``)."""
    p.add_argument("--state", default=None, choices=[s.value for s in RunState])
    p.add_argument("--limit", type=whole(1), default=50, help="at most this many (default 50)")


def list_runs(args: argparse.Namespace, store: Any) -> int:
    """``runs list [DAG]``, also ``dags list-runs DAG [-s S] [-e E] [--no-backfill]``
    (issue 26: Airflow's flags, on the alias only)."""
    since = until = None
    if args.dag_id:
        dag = store.get_dag(args.dag_id)
        since, until = _date_range(args, dag.timezone)
    filters = {"since": since, "until": until}
    if getattr(args, "no_backfill", False):
        filters["exclude_types"] = ("backfill",)
    runs = [r.to_dict() for r in store.list_runs(args.dag_id, args.state, args.limit, **filters)]
    emit(
        args,
        runs,
        runs,
        ("run_id", "dag_id", "run_type", "logical_date", "state", "start_date", "end_date"),
    )
    return 0


def _date_range(args: argparse.Namespace, timezone: str) -> tuple[Any, Any]:
    from orchestrator.cli.schedule import parse_when

    start, end = getattr(args, "start_date", None), getattr(args, "end_date", None)
    return (
        None if start is None else parse_when(start, timezone, "-s"),
        None if end is None else parse_when(end, timezone, "-e", end_of_day=True),
    )


def cmd_runs(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    if args.action == "list":
        return list_runs(args, store)
    run = store.get_run(args.run_id)
    tis = [t.to_dict() for t in store.task_instances(run.run_id)]
    if args.json:
        emit(args, run.to_dict() | {"task_instances": tis})
    else:
        for key, value in run.to_dict().items():
            print(f"{key:20} {value}")
        print()
        for t in tis:  # a mapped instance: load[3], and its map_index_template name
            if t["map_index"] >= 0:
                name = t.get("rendered_map_index")
                t["task_id"] += f"[{t['map_index']}]" + (f" {name}" if name else "")
        print(format_table(tis, ("task_id", "state", "try_number", "start_date", "end_date")))
    return 0
