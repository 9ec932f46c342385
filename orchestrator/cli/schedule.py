"""``orchestrator schedule preview DAG``: the next fire times, DST shifts, missed ones."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from orchestrator.cli.common import Parents, emit, format_table, open_store, whole
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError
from orchestrator.scheduling.misfire import missed_summary
from orchestrator.scheduling.schedule import to_utc
from orchestrator.settings import Settings


def parse_when(text: str, timezone: str, flag: str, *, end_of_day: bool = False) -> datetime:
    """A date or datetime from the command line, as aware UTC.

    Without an offset it is read in ``timezone`` (the DAG's). A bare date is midnight,
    or the last instant of that day with ``end_of_day`` (so ``--end 2026-01-31``
    covers the whole 31st). Local times follow the schedule's DST rules.

    >>> parse_when("2026-03-29", "Europe/Berlin", "--start").isoformat()
    '2026-03-28T23:00:00+00:00'
    >>> parse_when("2026-01-01T02:00+05:30", "UTC", "--start").isoformat()
    '2025-12-31T20:30:00+00:00'
    """
    zone = ZoneInfo(timezone)
    raw = text.strip()
    try:
        if len(raw) == 10:
            day = date.fromisoformat(raw)
            value = datetime.combine(day, time.max if end_of_day else time.min)
        else:
            value = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T"))
        if value.tzinfo is None:  # the schedule's DST rules: a repeated wall time is
            # its first occurrence, a nonexistent one the first instant after the gap
            value = to_utc(value, zone, 0)
        return value.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ConfigError(
            f"{flag}: {text!r} is not a date or datetime (expected e.g. 2026-01-31, "
            f"2026-01-31T02:00 in the DAG's timezone, or 2026-01-31T02:00+01:00)"
        ) from None


def date_text(flag: str) -> Callable[[str], str]:
    """An argparse type: text :func:`parse_when` reads (checked as UTC, read later in
    the DAG's timezone), else a usage error naming ``flag`` (exit 2, issue 26)."""

    def check(text: str) -> str:
        try:
            parse_when(text, "UTC", flag)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from None
        return text

    return check


PREVIEW_MAX = 10_000  # fire times one preview shows: a table longer than that is not read


def register(sub: Any, parents: Parents) -> None:
    group = sub.add_parser("schedule", help="schedule tools").add_subparsers(
        dest="action", required=True
    )
    p = parents.add(group, "preview", "show a DAG's next fire times", json_output=True)
    p.add_argument("dag_id")
    p.add_argument(
        "--count",
        type=whole(1, PREVIEW_MAX),
        default=10,
        help=f"how many fire times (default 10, at most {PREVIEW_MAX})",
    )
    p.add_argument("--start", default=None, help="from this date/datetime (default: now)")
    p.set_defaults(handler=cmd_schedule)


def preview_rows(schedule: Any, start: datetime, count: int) -> list[dict[str, Any]]:
    """The next ``count`` fire times at or after ``start``, each marked with DST shifts."""
    zone = ZoneInfo(schedule.timezone)
    rows: list[dict[str, Any]] = []
    prev_offset = start.astimezone(zone).utcoffset()
    t = schedule.next_after(start - timedelta(microseconds=1))
    while t is not None and len(rows) < count:
        local = t.astimezone(zone)
        offset = local.utcoffset()
        note = ""
        if offset != prev_offset:
            note = f"DST shift: UTC{_fmt(prev_offset)} -> UTC{_fmt(offset)}"
        rows.append({"local": local.isoformat(), "utc": t.isoformat(), "note": note})
        prev_offset = offset
        t = schedule.next_after(t)
    return rows


def _fmt(offset: timedelta | None) -> str:
    minutes = int((offset or timedelta(0)).total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def cmd_schedule(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    now = SystemClock().now()
    dag = store.get_dag(args.dag_id)
    spec = store.spec(dag.dag_id, dag.version_hash)
    start = now if args.start is None else parse_when(args.start, spec.timezone, "--start")
    rows = preview_rows(spec.schedule, start, args.count)
    has_history = dag.next_logical_date is None and store.latest_run_date(dag.dag_id) is not None
    missed = None
    if not dag.schedule_exhausted:
        missed = missed_summary(
            spec.schedule,
            spec.misfire,
            dag.next_logical_date,
            now,
            grace=spec.misfire_grace,
            catchup_window=spec.catchup_window,
            has_history=has_history,
        )
    if args.json:
        emit(
            args,
            {
                "dag_id": dag.dag_id,
                "schedule": dag.schedule,
                "timezone": spec.timezone,
                "misfire": spec.misfire,
                "fire_times": rows,
                "missed": missed,
            },
        )
        return 0
    print(
        f"{dag.dag_id}: {dag.schedule}, misfire={spec.misfire}"
        + (" (paused)" if dag.is_paused else "")
    )
    if not rows:
        print(
            "no fire times left" if spec.schedule.kind != "none" else "manual only: no fire times"
        )
    else:
        print(format_table(rows, ("local", "utc", "note")))
    if missed and missed["missed"]:
        print()
        print(missed["text"])
    return 0
