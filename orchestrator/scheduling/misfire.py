"""Which fire times become runs: the misfire policy, as a pure function.

``plan(schedule, policy, cursor, now)`` looks at the fire times from the DAG's
schedule cursor up to ``now`` and decides, per policy:

* ``backfill``: a run for every due fire time, oldest first (at most ``batch`` per call);
* ``coalesce``: one run, for the latest due fire time; the others are recorded as coalesced;
* ``skip``: at most one run, for the latest due fire time and only if it is within
  ``misfire_grace`` of now; every other due fire time is skipped.

Under ``coalesce`` and ``skip``, however many fire times are already due when the
scheduler decides (a new minutely DAG with a start date in the past, a scheduler back
after a pause), they give at most one run: 2,000 new minutely ``skip`` DAGs make at
most 2,000 runs at start-up, not one per fire time inside the grace. Only
``backfill`` keeps every one. Fire times older than ``catchup_window`` are never run,
whatever the policy.

>>> from datetime import UTC, datetime, timedelta
>>> from orchestrator.scheduling.schedule import parse_schedule
>>> s = parse_schedule(timedelta(hours=1), start=datetime(2026, 1, 1, tzinfo=UTC))
>>> p = plan(s, "coalesce", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 5, 30, tzinfo=UTC),
...          grace=timedelta(minutes=5), catchup_window=None, has_history=False)
>>> [t.hour for t in p.fire_times], p.new_cursor.hour
([5], 6)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from orchestrator.scheduling.schedule import Schedule


@dataclass(frozen=True)
class Plan:
    fire_times: list[datetime]
    new_cursor: datetime | None
    decisions: list[tuple[str, str]] = field(default_factory=list)


def plan(
    schedule: Schedule,
    policy: str,
    cursor: datetime | None,
    now: datetime,
    *,
    grace: timedelta,
    catchup_window: timedelta | None,
    has_history: bool,
    batch: int = 500,
) -> Plan | None:
    """Decide the runs to create now. None means nothing to do (no write needed)."""
    if schedule.kind == "none":
        return None
    initialising = cursor is None
    if cursor is None:
        # A new DAG starts at its first fire time; a changed schedule starts after now,
        # so it never creates runs for its own past fire times.
        cursor = schedule.next_after(now) if has_history else schedule.first()
        if cursor is None:
            return None
    if cursor > now:
        return Plan([], cursor) if initialising else None

    decisions: list[tuple[str, str]] = []
    if catchup_window is not None and now - cursor > catchup_window:
        oldest_allowed = now - catchup_window
        first_kept = schedule.next_after(oldest_allowed - timedelta(microseconds=1))
        decisions.append(
            (
                "fire_expired",
                f"fire times from {cursor.isoformat()} to before {oldest_allowed.isoformat()} "
                f"are older than catchup_window {catchup_window} and were not run",
            )
        )
        cursor = first_kept
        if cursor is None or cursor > now:
            return Plan([], cursor, decisions)

    if policy == "backfill":
        due = schedule.fire_times(cursor, now, limit=batch)
        new_cursor = schedule.next_after(due[-1])
        return Plan(due, new_cursor, decisions)

    latest = schedule.previous_before(now + timedelta(microseconds=1))
    assert latest is not None and latest >= cursor
    new_cursor = schedule.next_after(latest)
    if policy == "coalesce":
        if latest > cursor:
            decisions.append(
                (
                    "fire_coalesced",
                    f"missed fire times from {cursor.isoformat()} to before "
                    f"{latest.isoformat()} coalesced into the run for {latest.isoformat()}",
                )
            )
        return Plan([latest], new_cursor, decisions)

    # skip: the latest due fire time runs if it is noticed within the grace; the rest
    # of what is due (inside the grace or not) is skipped, so at most one run
    keep = [latest] if now - latest <= grace else []
    if not keep or keep[0] > cursor:
        until = keep[0] if keep else new_cursor
        decisions.append(
            (
                "fire_skipped",
                f"missed fire times from {cursor.isoformat()} to before "
                f"{until.isoformat() if until else 'now'} skipped (misfire='skip')",
            )
        )
    return Plan(keep, new_cursor, decisions)


def data_intervals(
    schedule: Schedule, fire_times: list[datetime]
) -> list[tuple[datetime, tuple[datetime, datetime]]]:
    """``(t, schedule.data_interval(t))`` for a plan's fire times, which are consecutive.

    Each interval starts at the fire time before it, so only the first one asks the
    schedule (for cron, one reverse croniter walk instead of one per fire time).
    """
    out: list[tuple[datetime, tuple[datetime, datetime]]] = []
    for i, t in enumerate(fire_times):
        out.append((t, (fire_times[i - 1], t) if i else schedule.data_interval(t)))
    return out


def missed_summary(
    schedule: Schedule,
    policy: str,
    cursor: datetime | None,
    now: datetime,
    *,
    grace: timedelta,
    catchup_window: timedelta | None,
    has_history: bool,
    limit: int = 100_000,
) -> dict:
    """What the next scheduler tick would do with the fire times due by ``now``.

    Runs :func:`plan` to completion (as repeated ticks at ``now`` would) and counts:
    ``missed`` (due fire times), ``run`` (runs it would create), ``expired``,
    ``coalesced``, ``skipped``, plus ``first_run``/``last_run`` and a ``text`` line.
    """
    start = schedule.first() if cursor is None and not has_history else cursor
    due = [] if start is None or start > now else schedule.fire_times(start, now, limit=limit)
    runs: list[datetime] = []
    expired = 0
    c = cursor
    for _ in range(limit):
        p = plan(
            schedule,
            policy,
            c,
            now,
            grace=grace,
            catchup_window=catchup_window,
            has_history=has_history,
            batch=limit,
        )
        if p is None:
            break
        runs += p.fire_times
        if any(kind == "fire_expired" for kind, _ in p.decisions):
            oldest = now - catchup_window if catchup_window is not None else now
            expired = sum(t < oldest for t in due)
        if p.new_cursor is None or p.new_cursor == c or p.new_cursor > now:
            break
        c = p.new_cursor
    rest = len(due) - len(runs) - expired
    out = {
        "missed": len(due),
        "run": len(runs),
        "expired": expired,
        "coalesced": rest if policy == "coalesce" else 0,
        "skipped": rest if policy == "skip" else 0,
        "first_run": runs[0].isoformat() if runs else None,
        "last_run": runs[-1].isoformat() if runs else None,
    }
    if not due:
        out["text"] = "no fire time is due"
        return out
    parts = [f"{len(due)} fire time(s) due since {due[0].isoformat()}: misfire={policy!r}"]
    parts.append(f"would run {len(runs)}" + (f" (latest {runs[-1].isoformat()})" if runs else ""))
    if expired:
        parts.append(f"drop {expired} older than catchup_window {catchup_window}")
    if out["coalesced"]:
        parts.append(f"coalesce {out['coalesced']}")
    if out["skipped"]:
        parts.append(f"skip {out['skipped']}")
    out["text"] = ", ".join(parts)
    return out
