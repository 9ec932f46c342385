"""Airflow's ``dags`` sub-commands over our own (issue 26): each is an alias, and its
``--help`` says of which command.

    orchestrator dags list-runs DAG [--state S] [--limit N] [-s S] [-e E] [--no-backfill]
    orchestrator dags list-import-errors                     # = dags errors
    orchestrator dags state DAG LOGICAL_DATE                 # the state of that run
    orchestrator dags next-execution DAG [-n N]              # = schedule preview DAG

``dags next-execution`` starts from the next fire time the scheduler has stored for
the DAG, or from now before the scheduler has seen it, as ``schedule preview`` does.

``dags state`` prints the state alone (``success``), as Airflow does, so a script can
compare it; a DAG with no run at that logical date is an error (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from orchestrator.cli.common import Parents, emit, whole
from orchestrator.cli.schedule import date_text, parse_when, preview_rows
from orchestrator.errors import ConfigError, NotFoundError, UsageError

ACTIONS = ("list-runs", "state", "next-execution")


def register(dags: Any, parents: Parents) -> None:
    from orchestrator.cli.runs import run_filters

    p = parents.add(dags, "list-runs", "Airflow's name for 'runs list DAG'", json_output=True)
    p.add_argument("dag_id")
    run_filters(p)
    p.add_argument(
        "-s", "--start-date", type=date_text("-s/--start-date"), default=None,
        help="runs with a logical date from this date/datetime (DAG timezone)",
    )  # fmt: skip
    p.add_argument(
        "-e", "--end-date", type=date_text("-e/--end-date"), default=None,
        help="... up to this one, inclusive (a date means the whole day)",
    )  # fmt: skip
    p.add_argument("--no-backfill", action="store_true", help="leave out backfill runs")
    parents.add(dags, "list-import-errors", "Airflow's name for 'dags errors'", json_output=True)
    p = parents.add(
        dags,
        "state",
        "the state of DAG's run at LOGICAL_DATE (Airflow's 'dags state'; as 'runs show')",
        json_output=True,
    )
    p.add_argument("dag_id")
    p.add_argument(
        "logical_date",
        metavar="LOGICAL_DATE",
        help="the run's logical date (DAG timezone unless an offset is given)",
    )
    p = parents.add(
        dags,
        "next-execution",
        "the DAG's next fire time(s) (Airflow's name for 'schedule preview DAG')",
        json_output=True,
    )
    p.add_argument("dag_id")
    p.add_argument(
        "-n",
        "--num-executions",
        type=whole(1, 10_000),
        default=1,
        metavar="N",
        help="how many fire times (default 1)",
    )


def cmd_airflow_dags(args: argparse.Namespace, store: Any, now: datetime) -> int:
    if args.action == "list-runs":
        from orchestrator.cli.runs import list_runs

        return list_runs(args, store)
    dag = store.get_dag(args.dag_id)
    spec = store.spec(dag.dag_id, dag.version_hash)
    if args.action == "state":
        try:
            when = parse_when(args.logical_date, spec.timezone, "LOGICAL_DATE")
        except ConfigError as exc:  # a bad argument: exit 2
            raise UsageError(str(exc)) from None
        found = store.external_state(dag.dag_id, when, None)
        if found is None:
            raise NotFoundError(f"DAG {dag.dag_id!r} has no run at {when.isoformat()}")
        run_id, state = found
        emit(args, {"dag_id": dag.dag_id, "run_id": run_id, "state": state} if args.json else state)
        return 0
    # next-execution: from the next fire time the scheduler has stored, else from now
    # (what 'schedule preview' shows); none for a manual-only or finished schedule
    start = dag.next_logical_date or now
    rows = [] if dag.schedule_exhausted else preview_rows(spec.schedule, start, args.num_executions)
    if args.json:
        emit(args, {"dag_id": dag.dag_id, "is_paused": dag.is_paused, "fire_times": rows})
        return 0
    for row in rows:
        print(row["utc"])
    if not rows:
        print("None")  # Airflow's answer for a DAG with no next run
    if dag.is_paused:  # on stderr: NEXT=$(orchestrator dags next-execution D) stays a date
        print(
            f"DAG {dag.dag_id} is paused: no run is created until it is unpaused", file=sys.stderr
        )
    return 0
