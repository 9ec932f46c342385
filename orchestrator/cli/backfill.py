"""``orchestrator backfill``: create runs for a date range, then follow them.

    orchestrator backfill DAG --start S --end E [--dry-run] [--rerun-failed | --reset]
                          [--max-active-runs N] [--reverse] [--no-wait] [--yes]
    orchestrator backfill status ID      # follow a backfill (progress until it is done)
    orchestrator backfill cancel ID      # cancel its queued runs; running ones finish
    orchestrator backfill list [DAG]
    orchestrator backfill create --dag-id DAG --from-date S --to-date E    # Airflow's form
                          [--reprocess-behavior none|failed|completed] [--run-backwards]
                          [--dag-run-conf JSON] [--max-active-runs N] [--dry-run]

A DAG named like an action (``list``, ``status``, ``cancel``, ``create``) is read as
a DAG wherever the action's reading cannot hold: with ``--start``/``--end``, or as
``--dag-id``.

The backfill is stored; the scheduler starts its runs (within its max_active_runs,
in its order) like any other runs, under the same leases. Waiting only watches:
Ctrl-C stops the watching, never the backfill.

The progress line is written here rather than with rich or tqdm: it is one line of
arithmetic, and a dependency for it would be the only one outside the engine's needs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from orchestrator.authoring.spec import validate_conf
from orchestrator.cli.common import (
    Parents,
    cli_actor,
    emit,
    format_table,
    open_store,
    parse_json_object,
    whole,
)
from orchestrator.cli.schedule import date_text, parse_when
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError, NotFoundError, UsageError
from orchestrator.settings import Settings

ACTIONS = ("status", "cancel", "list")


def register(sub: Any, parents: Parents) -> None:
    p = parents.add(
        sub,
        "backfill",
        "create runs for every fire time in [--start, --end] (or: status|cancel ID, list)",
        json_output=True,
    )
    p.add_argument("dag_id", metavar="DAG|status|cancel|list|create")
    p.add_argument("backfill_id", nargs="?", metavar="ID|DAG", help="for status/cancel/list")
    p.add_argument("--start", help="first date/datetime (DAG timezone unless an offset is given)")
    p.add_argument("--end", help="last date/datetime, inclusive (a date means the whole day)")
    p.add_argument("--dry-run", action="store_true", help="list the fire times, create nothing")
    p.add_argument("--rerun-failed", action="store_true", help="clear failed/cancelled runs")
    p.add_argument("--reset", action="store_true", help="clear every finished run in range")
    p.add_argument("--max-active-runs", type=whole(1), default=None, help="default: the DAG's")
    p.add_argument("--reverse", action="store_true", help="newest fire times first")
    p.add_argument("--no-wait", action="store_true", help="return once the runs are created")
    p.add_argument("--yes", action="store_true", help="allow more than backfill_max_runs runs")
    p.add_argument(
        "--conf", default=None, help="JSON object of params for the new runs, e.g. '{\"n\": 3}'"
    )
    _airflow_form(p)
    p.set_defaults(handler=cmd_backfill)


AIRFLOW_FLAGS = {  # issue 26: Airflow's 'backfill create' flags -> ours
    "from_date": ("--from-date", "--start"),
    "to_date": ("--to-date", "--end"),
    "reprocess_behavior": ("--reprocess-behavior", "--rerun-failed / --reset"),
    "run_backwards": ("--run-backwards", "--reverse"),
    "dag_run_conf": ("--dag-run-conf", "--conf"),
}
REPROCESS = {"none": {}, "failed": {"rerun_failed": True}, "completed": {"reset": True}}


def _airflow_form(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group(
        "Airflow's form: backfill create --dag-id DAG --from-date A --to-date B "
        "(an alias of 'backfill DAG --start A --end B')"
    )
    group.add_argument("--dag-id", dest="airflow_dag_id", default=None, metavar="DAG")
    group.add_argument("--from-date", type=date_text("--from-date"), default=None, help="= --start")
    group.add_argument(
        "--to-date",
        type=date_text("--to-date"),
        default=None,
        help="= --end (a date means the whole day)",
    )
    group.add_argument(
        "--reprocess-behavior",
        choices=tuple(REPROCESS),
        default=None,
        help="existing runs: none (default: left alone), failed (= --rerun-failed), "
        "completed (= --reset: every finished run again)",
    )
    group.add_argument("--run-backwards", action="store_true", help="= --reverse")
    group.add_argument("--dag-run-conf", default=None, metavar="JSON", help="= --conf")


def airflow_form(args: argparse.Namespace) -> None:
    """``backfill create --dag-id D --from-date A --to-date B ...`` read as ``backfill D
    --start A --end B ...`` (in place). The first word is a DAG id unless ``--dag-id`` is
    given: a DAG named ``create`` is ``backfill create --start ...``. A flag of one form
    mixed with the other's is a usage error naming what to write."""
    given = [dest for dest in AIRFLOW_FLAGS if getattr(args, dest) not in (None, False)]
    if args.airflow_dag_id is None:
        if given:
            flag, ours = AIRFLOW_FLAGS[given[0]]
            raise UsageError(
                f"{flag} belongs to 'backfill create --dag-id DAG ...'; "
                f"with 'backfill DAG' write {ours}"
            )
        return
    if args.dag_id != "create" or args.backfill_id is not None:
        raise UsageError("--dag-id belongs to 'backfill create --dag-id DAG ...'")
    for ours, theirs in (("start", "from_date"), ("end", "to_date"), ("reverse", "run_backwards"),
                         ("conf", "dag_run_conf")):  # fmt: skip
        if getattr(args, ours) not in (None, False):
            flag, mine = AIRFLOW_FLAGS[theirs]
            raise UsageError(f"'backfill create' takes {flag}, not {mine}")
    if args.rerun_failed or args.reset:
        raise UsageError("'backfill create' takes --reprocess-behavior, not --rerun-failed/--reset")
    args.dag_id, args.start, args.end = args.airflow_dag_id, args.from_date, args.to_date
    args.reverse, args.conf = args.run_backwards, args.dag_run_conf
    for name, value in REPROCESS[args.reprocess_behavior or "none"].items():
        setattr(args, name, value)
    for flag, value in (("--from-date", args.start), ("--to-date", args.end)):
        if value is None:
            raise UsageError(f"'backfill create' needs {flag}")


def cmd_backfill(args: argparse.Namespace, settings: Settings) -> int:
    airflow_form(args)  # issue 26
    store = open_store(settings)
    now = SystemClock().now()
    if args.dag_id in ACTIONS and args.start is None and args.end is None:
        return _action(args, store, now)  # with --start/--end, 'list' is a DAG's name
    if args.backfill_id is not None:
        raise ConfigError(f"unexpected argument {args.backfill_id!r} after the DAG id")
    if args.start is None or args.end is None:
        hint = " (Airflow's form: backfill create --dag-id DAG --from-date A --to-date B)"
        raise ConfigError(
            "--start and --end are both required" + (hint if args.dag_id == "create" else "")
        )
    if args.rerun_failed and args.reset:
        raise ConfigError("--rerun-failed and --reset exclude each other (--reset clears all)")
    conf = parse_json_object(args.conf, "--conf")
    dag = store.get_dag(args.dag_id)
    if not dag.is_active:
        raise NotFoundError(f"DAG {args.dag_id!r} is no longer defined ({dag.fileloc})")
    spec = store.spec(dag.dag_id, dag.version_hash)
    validate_conf(spec, conf, max_bytes=settings.max_conf_bytes)  # before any work (issue 25)
    start = parse_when(args.start, spec.timezone, "--start")
    end = parse_when(args.end, spec.timezone, "--end", end_of_day=True)
    if end < start:
        raise ConfigError(
            f"--end {args.end} ({end.isoformat()}) is before --start {args.start} "
            f"({start.isoformat()})"
        )
    if spec.schedule.kind == "none":
        raise ConfigError(f"DAG {dag.dag_id!r} has no schedule: there are no fire times to run")
    max_active = spec.max_active_runs if args.max_active_runs is None else args.max_active_runs
    if max_active < 1:
        raise ConfigError(f"--max-active-runs must be >= 1, got {max_active}")
    cap, hard = settings.backfill_max_runs, settings.backfill_hard_max_runs
    progress = Progress(sys.stderr)
    limit = (hard if args.yes else min(cap, hard)) + 1
    times = find_fire_times(spec.schedule, start, end, limit, progress)
    if len(times) > hard:
        raise ConfigError(
            f"the range holds more than {hard} fire times, the most one backfill may create "
            f"even with --yes (backfill_hard_max_runs): split it into several backfills"
        )
    if len(times) > cap and not args.yes and not args.dry_run:
        raise ConfigError(
            f"the range holds more than {cap} fire times (backfill_max_runs): pass --yes "
            f"to create them all, or narrow --start/--end"
        )
    if args.reverse:
        times.reverse()
    if args.dry_run:
        return _dry_run(args, store, spec, times, cap)
    if not times:
        print(f"no fire times of {dag.dag_id} between {start.isoformat()} and {end.isoformat()}")
        return 0
    record, counts = store.create_backfill(
        dag.dag_id,
        [(t, spec.schedule.data_interval(t)) for t in sorted(times)],
        now,
        start=start,
        end=end,
        max_active_runs=max_active,
        reverse=args.reverse,
        rerun_failed=args.rerun_failed,
        reset=args.reset,
        triggered_by=cli_actor(),
        conf=conf,
        progress=lambda done, total: progress.show(
            f"creating runs: {done}/{total} fire times", last=done == total
        ),
    )
    progress.end()
    if args.json and args.no_wait:
        emit(args, record.to_dict() | counts)
        return 0
    print(
        f"backfill {record.id} of {dag.dag_id}: {len(times)} fire time(s), "
        f"{counts['created']} run(s) created, {counts['cleared']} cleared, "
        f"{counts['kept']} existing left alone; max_active_runs={max_active}"
        + (", newest first" if args.reverse else "")
    )
    if dag.is_paused:
        print(f"DAG {dag.dag_id} is paused: its backfill runs wait until it is unpaused")
    if args.no_wait:
        print(f"follow it with 'orchestrator backfill status {record.id}'")
        return 0
    return follow(store, record.id)


def _dry_run(args: argparse.Namespace, store: Any, spec: Any, times: list, cap: int) -> int:
    zone = ZoneInfo(spec.timezone)
    existing = {
        r.logical_date: r
        for r in store.list_runs(spec.dag_id, limit=1_000_000)
        if r.run_type in ("scheduled", "backfill")
    }
    rows = []
    for t in times:
        old = existing.get(t)
        if old is None:
            action = "create"
        elif old.state in (("success", "failed", "cancelled") if args.reset else ()) or (
            args.rerun_failed and old.state in ("failed", "cancelled")
        ):
            action = f"clear ({old.state})"
        else:
            action = f"keep ({old.state})"
        rows.append(
            {"local": t.astimezone(zone).isoformat(), "utc": t.isoformat(), "action": action}
        )
    if args.json:
        emit(args, rows)
    else:
        print(format_table(rows, ("local", "utc", "action")))
        over = len(times) > cap and not args.yes
        print(
            f"dry run: {len(times)}{'+' if over else ''} fire time(s); nothing was created"
            + (f" (more than backfill_max_runs={cap}: --yes needed)" if over else "")
        )
    return 0


def _action(args: argparse.Namespace, store: Any, now: Any) -> int:
    if args.dag_id == "list":
        rows = [b.to_dict() for b in store.list_backfills(args.backfill_id)]
        for row in rows:
            row["done"] = (
                f"{sum(row['runs'].get(s, 0) for s in ('success', 'failed', 'cancelled'))}/{row['total']}"
            )
        emit(args, rows, rows, ("id", "dag_id", "state", "done", "range_start", "range_end"))
        return 0
    if args.backfill_id is None or not args.backfill_id.isdigit():
        raise ConfigError(
            f"backfill {args.dag_id} needs a backfill id, e.g. 'backfill {args.dag_id} 3'"
        )
    bid = int(args.backfill_id)
    if args.dag_id == "cancel":
        n = store.cancel_backfill(bid, now, who=cli_actor())
        record = store.get_backfill(bid)
        print(f"backfill {bid} is {record.state}: {n} queued run(s) cancelled; running runs finish")
        return 0
    store.get_backfill(bid)
    return follow(store, bid)


FIND_CHUNK = 10_000  # fire times computed between two progress lines (about a second)


class Progress:
    """Progress lines on ``out`` while a backfill finds its fire times and writes its
    runs: one line rewritten on a terminal, a line a step otherwise. A step that is
    also the ``last`` one, shown first, is not shown: it took no noticeable time."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.shown, self.tty = out, False, out.isatty()

    def show(self, line: str, *, last: bool = False) -> None:
        if last and not self.shown:
            return
        self.out.write(("\r\033[K" + line) if self.tty else line + "\n")
        self.out.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown and self.tty:
            self.out.write("\n")
            self.out.flush()
        self.shown = False


def find_fire_times(
    schedule: Any, start: datetime, end: datetime, limit: int, progress: Progress
) -> list[datetime]:
    """``schedule.fire_times(start, end, limit=limit)``, FIND_CHUNK at a time, saying
    how many so far (a minutely cron over years takes seconds to walk)."""
    times: list[datetime] = []
    lo = start
    while len(times) < limit:
        chunk = schedule.fire_times(lo, end, limit=min(FIND_CHUNK, limit - len(times)))
        times += chunk
        if len(chunk) < FIND_CHUNK:
            break
        lo = chunk[-1] + timedelta(microseconds=1)
        progress.show(f"finding fire times: {len(times)} so far")
    progress.end()
    return times


def progress_line(record: Any, elapsed: float) -> str:
    """``[#####-----] 5/10 runs done, 1 failed, ETA 0:00:12`` for a backfill record."""
    total = max(record.total, 1)
    done = min(record.finished, total)
    width = 20
    filled = width * done // total
    eta = "?"
    if done and done < total:
        left = elapsed / done * (total - done)
        eta = time.strftime("%H:%M:%S", time.gmtime(left))
    elif done >= total:
        eta = "0:00:00"
    return (
        f"[{'#' * filled}{'-' * (width - filled)}] {done}/{record.total} runs done, "
        f"{record.failed} failed, ETA {eta}"
    )


def follow(
    store: Any,
    backfill_id: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
    out: TextIO | None = None,
    interval: float = 1.0,
) -> int:
    """Show progress until the backfill is over; 1 if any run failed or it was cancelled.

    Ctrl-C stops the watching only, and says how to follow or cancel the backfill.
    """
    out = out or sys.stderr
    tty = out.isatty()
    started = time.monotonic()
    last = ""
    try:
        while True:
            record = store.get_backfill(backfill_id)
            line = progress_line(record, time.monotonic() - started)
            if line != last:
                out.write(("\r" + line) if tty else line + "\n")
                out.flush()
                last = line
            if record.state != "running":
                break
            sleep(interval)
    except KeyboardInterrupt:
        out.write(
            f"\nstopped waiting; backfill {backfill_id} goes on in the scheduler.\n"
            f"  follow it: orchestrator backfill status {backfill_id}\n"
            f"  cancel it: orchestrator backfill cancel {backfill_id}\n"
        )
        return 130
    if tty:
        out.write("\n")
    print(
        f"backfill {backfill_id} {record.state}: {record.runs.get('success', 0)} succeeded, "
        f"{record.failed} failed, {record.runs.get('cancelled', 0)} cancelled"
    )
    return 1 if record.failed or record.state == "cancelled" else 0
