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
    p.add_argument("--state", default=None, choices=[s.value for s in RunState])
    p.add_argument("--limit", type=whole(1), default=50, help="at most this many (default 50)")
    p = parents.add(runs, "show", "show a run and its task instances", json_output=True)
    p.add_argument("run_id")
    for choice in runs.choices.values():
        choice.set_defaults(handler=cmd_runs)


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
        for t in tis:  # a mapped instance: load[3], and its map_index_template name
            if t["map_index"] >= 0:
                name = t.get("rendered_map_index")
                t["task_id"] += f"[{t['map_index']}]" + (f" {name}" if name else "")
        print(format_table(tis, ("task_id", "state", "try_number", "start_date", "end_date")))
    return 0
