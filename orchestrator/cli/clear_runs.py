"""``orchestrator tasks clear DAG -t REGEX -s START -e END`` (Airflow's form, issue 26):
clear the matching tasks of every run of a DAG whose logical date is in a range.

    orchestrator tasks clear etl -t '^load' -s 2026-01-01 -e 2026-01-31 --downstream
    orchestrator tasks clear etl --only-failed -y

It lists every task instance it would reset (run, logical date, task, state) and asks
before it writes; ``-y`` answers yes. Without a terminal to ask on and without ``-y``
it refuses (exit 2) rather than wait for an answer nobody can give. Each task is
cleared through the store's ``clear_task``, as ``tasks clear RUN TASK`` clears it
(its setups and teardowns with it): only finished instances are reset.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime
from typing import Any

import networkx as nx

from orchestrator.cli.common import cli_actor, emit, format_table
from orchestrator.cli.schedule import date_text, parse_when
from orchestrator.errors import UsageError
from orchestrator.states import TASK_FINISHED, TaskState

AIRFLOW_FLAGS = {  # the flags of the DAG form: dest -> how it is written
    "task_regex": "-t/--task-regex",
    "start_date": "-s/--start-date",
    "end_date": "-e/--end-date",
    "upstream": "-u/--upstream",
    "only_failed": "-f/--only-failed",
    "yes": "-y/--yes",
}
FAILED = frozenset({TaskState.FAILED, TaskState.UPSTREAM_FAILED})
ALL_RUNS = 10_000_000  # list_runs' limit when every run of the DAG is read


def regex(text: str) -> re.Pattern[str]:
    """An argparse type: a Python regular expression, else a usage error naming it."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a valid regular expression: {exc}"
        ) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("Airflow's form: tasks clear DAG [-t REGEX] [-s S] [-e E] ...")
    group.add_argument(
        "-t",
        "--task-regex",
        type=regex,
        default=None,
        metavar="REGEX",
        help="the tasks whose id it matches (re.search; default: every task)",
    )
    group.add_argument(
        "-s", "--start-date", type=date_text("-s/--start-date"), default=None,
        help="runs with a logical date from this date/datetime (DAG timezone)",
    )  # fmt: skip
    group.add_argument(
        "-e", "--end-date", type=date_text("-e/--end-date"), default=None,
        help="... up to this one, inclusive (a date means the whole day)",
    )  # fmt: skip
    group.add_argument("-u", "--upstream", action="store_true", help="also their upstream tasks")
    group.add_argument(
        "-f", "--only-failed", action="store_true", help="only failed and upstream_failed ones"
    )
    group.add_argument("-y", "--yes", action="store_true", help="clear without asking")


def refuse_airflow_flags(args: argparse.Namespace) -> None:
    """``tasks clear RUN TASK`` with a flag of the DAG form: a usage error (exit 2)."""
    given = [flag for dest, flag in AIRFLOW_FLAGS.items() if getattr(args, dest)]
    if given:
        raise _usage(
            f"{given[0]} belongs to the DAG form 'tasks clear DAG {given[0].split('/')[0]} ...' "
            f"(one positional, a DAG id); 'tasks clear RUN TASK' clears one task of one run"
        )


def _usage(message: str) -> UsageError:
    return UsageError(f"tasks clear: {message}")


def targets(
    spec: Any, pattern: re.Pattern[str] | None, upstream: bool, downstream: bool
) -> set[str]:
    """The tasks of one DAG version to clear: those ``pattern`` matches, with their
    upstream and downstream tasks if asked, and the setups and teardowns that go along."""
    chosen = {t for t in spec.tasks if pattern is None or pattern.search(t)}
    out = set(chosen)
    for t in chosen:
        if upstream:
            out |= nx.ancestors(spec.graph, t)
        if downstream:
            out |= nx.descendants(spec.graph, t)
    for t in list(out):
        out.update(spec.setup_teardown.clear_targets(t, False))
    return out


def plan(
    store: Any, dag_id: str, start: datetime | None, end: datetime | None, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """The finished task instances the clear would reset, oldest run first: with
    only_failed, the failed ones and the setups and teardowns clearing them takes along
    (``clear_task`` clears those whatever their state)."""
    wanted = FAILED if args.only_failed else TASK_FINISHED
    rows: list[dict[str, Any]] = []
    specs: dict[str, Any] = {}
    for run in reversed(store.list_runs(dag_id, limit=ALL_RUNS, since=start, until=end)):
        if run.version_hash not in specs:
            spec = store.spec(dag_id, run.version_hash)
            chosen = targets(spec, args.task_regex, args.upstream, args.downstream)
            specs[run.version_hash] = (spec, chosen)
        spec, chosen = specs[run.version_hash]
        tis = [t for t in store.task_instances(run.run_id) if t.state in TASK_FINISHED]
        picked = [t for t in tis if t.task_id in chosen and t.state in wanted]
        along = {a for t in picked for a in spec.setup_teardown.clear_targets(t.task_id)[1:]}
        picked += [t for t in tis if t.task_id in along and t not in picked]
        for ti in sorted(
            picked, key=lambda t: (spec.topological_order.index(t.task_id), t.map_index)
        ):
            rows.append(
                {"run_id": run.run_id, "logical_date": run.logical_date,
                 "task_id": ti.task_id, "map_index": ti.map_index, "state": ti.state}
            )  # fmt: skip
    return rows


def clear_across_runs(
    args: argparse.Namespace, store: Any, now: datetime, *, stdin: Any = None
) -> int:
    stdin = sys.stdin if stdin is None else stdin
    dag = store.get_dag(args.run_id)
    if args.map_index is not None:
        raise _usage("--map-index belongs to 'tasks clear RUN TASK --map-index N'")
    spec = store.spec(dag.dag_id, dag.version_hash)
    if args.task_regex is not None and not targets(spec, args.task_regex, False, False):
        raise _usage(
            f"-t/--task-regex {args.task_regex.pattern!r} matches no task of DAG "
            f"{dag.dag_id!r} (tasks: {', '.join(spec.tasks)})"
        )
    start = None if args.start_date is None else parse_when(args.start_date, spec.timezone, "-s")
    end = None
    if args.end_date is not None:
        end = parse_when(args.end_date, spec.timezone, "-e", end_of_day=True)
    if start is not None and end is not None and end < start:
        raise _usage(f"-e/--end-date {args.end_date} is before -s/--start-date {args.start_date}")
    rows = plan(store, dag.dag_id, start, end, args)
    if not rows:
        emit(args, [] if args.json else "nothing to clear: no finished task instance matches")
        return 0
    if not args.yes:
        print(format_table(rows, ("run_id", "logical_date", "task_id", "map_index", "state")))
        if not _is_terminal(stdin):
            raise _usage(
                f"{len(rows)} task instance(s) would be cleared, and there is no terminal to "
                "confirm on: pass -y/--yes to clear them"
            )
        print(f"Clear these {len(rows)} task instance(s)? [y/N] ", end="", flush=True)
        if stdin.readline().strip().lower() not in ("y", "yes"):
            print("cancelled: nothing was cleared")
            return 0
    cleared = _clear(store, rows, now, only_failed=args.only_failed)
    if args.json:
        emit(args, [{"run_id": run_id, "cleared": done} for run_id, done in cleared.items()])
    else:
        for run_id, done in cleared.items():
            print(f"{run_id}: cleared {', '.join(done)}")
    return 0


def _clear(
    store: Any, rows: list[dict[str, Any]], now: datetime, *, only_failed: bool
) -> dict[str, list[str]]:
    """Each planned task cleared by ``clear_task``; with only_failed, a mapped task's
    failed instances one by one (its other instances are left as they are)."""
    who = cli_actor()
    out: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    for row in rows:
        run_id, task_id = row["run_id"], row["task_id"]
        one = only_failed and row["map_index"] >= 0
        if not one and (run_id, task_id) in seen:
            continue
        seen.add((run_id, task_id))
        done = store.clear_task(
            run_id, task_id, now, who=who, map_index=row["map_index"] if one else None
        )
        names = out.setdefault(run_id, [])
        names += [d for d in done if d not in names]
    return out


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed, or not a file
        return False
