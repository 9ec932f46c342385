"""The actions a user can take, shared by the HTML forms and the JSON API.

Each calls one store transition and returns a sentence saying what it did, which
the page flashes and the API returns as ``message``.
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from orchestrator.errors import ConfigError, StateError
from orchestrator.store import Store


def actor(channel: str, user: str | None, address: str | None) -> str:
    """Who asks, as stored on the runs they create: ``web:alice``, ``api:alice``, or
    ``web:anonymous@127.0.0.1`` when the UI needs no login (loopback only).

    >>> actor("api", "alice", "10.0.0.5"), actor("web", None, "127.0.0.1")
    ('api:alice', 'web:anonymous@127.0.0.1')
    """
    return f"{channel}:{user}" if user else f"{channel}:anonymous@{address or 'unknown'}"


def trigger(
    store: Store,
    dag_id: str,
    conf: dict[str, Any],
    now: datetime,
    who: str | None = None,
    *,
    logical_date: datetime | None = None,
) -> tuple[str, str]:
    """(run_id, message) of a new manual run with ``conf`` (at ``logical_date``, now
    by default), asked for by ``who``."""
    run = store.trigger_run(dag_id, now, conf=conf, logical_date=logical_date, triggered_by=who)
    # names only: values can be large, and the message is flashed into the session cookie
    shown = f"params {', '.join(conf)}" if conf else "default params"
    return run.run_id, f"Triggered {run.run_id} with {shown}."


def set_paused(
    store: Store, dag_id: str, paused: bool, now: datetime, who: str | None = None
) -> str:
    changed = store.set_paused(dag_id, paused, now, who=who)
    word = "paused" if paused else "unpaused"
    return f"{dag_id} {word}." if changed else f"{dag_id} was {word} already."


def set_paused_many(
    store: Store, dag_ids: list[str], paused: bool, now: datetime, who: str | None = None
) -> str:
    changed = store.set_paused_many(dag_ids, paused, now, who=who)
    word = "paused" if paused else "unpaused"
    rest = len(set(dag_ids)) - len(changed)
    told = f"{len(changed)} DAG{'s' if len(changed) != 1 else ''} {word}"
    if changed:
        told += f": {', '.join(changed[:20])}{' ...' if len(changed) > 20 else ''}"
    return told + (f"; {rest} already {word}." if rest else ".")


def clear(
    store: Store,
    run_id: str,
    task_id: str,
    downstream: bool,
    now: datetime,
    who: str | None = None,
    map_index: int | None = None,
) -> str:
    cleared = store.clear_task(
        run_id, task_id, now, downstream=downstream, who=who, map_index=map_index
    )
    if not cleared:
        raise StateError(f"{task_id} is not finished, so there is nothing to clear")
    return f"Cleared {', '.join(cleared)} in {run_id}; they will run again."


def mark(
    store: Store,
    run_id: str,
    task_id: str,
    state: str,
    now: datetime,
    who: str | None,
    map_index: int | None = None,
) -> str:
    was = store.mark_task(run_id, task_id, state, now, who=who, map_index=map_index)
    return f"Marked {task_id} in {run_id} {state} (was {was})."


def cancel(store: Store, run_id: str, now: datetime, who: str | None) -> str:
    reason = f"cancelled by {who}" if who else "cancelled by a user"
    if not store.cancel_run(run_id, now, reason, who=who):
        raise StateError(f"{run_id} is already finished")
    return f"Cancelled {run_id}."


MAX_BACKFILL = 1000


def backfill(
    store: Store,
    dag_id: str,
    start: str,
    end: str,
    now: datetime,
    who: str | None = None,
    conf: dict[str, Any] | None = None,
) -> str:
    """Runs for every fire time from day ``start`` to day ``end`` (in the DAG's zone),
    with ``conf`` (checked against the DAG's params: ConfigError, nothing stored)."""
    dag = store.get_dag(dag_id)
    spec = store.spec(dag_id, dag.version_hash)
    zone = ZoneInfo(spec.timezone)
    try:
        lo = datetime.combine(date.fromisoformat(start), time(0), zone)
        hi = datetime.combine(date.fromisoformat(end), time.max, zone)
    except ValueError:
        raise ConfigError(
            f"backfill: dates must look like 2026-01-31, got {start!r} and {end!r}"
        ) from None
    if hi < lo:
        raise ConfigError(f"backfill: the end {end} is before the start {start}")
    if spec.schedule.kind == "none":
        raise ConfigError(f"{dag_id} has no schedule, so it has no fire times to backfill")
    times = spec.schedule.fire_times(lo, hi, limit=MAX_BACKFILL + 1)
    if not times:
        raise ConfigError(f"{dag_id} has no fire times from {start} to {end}")
    if len(times) > MAX_BACKFILL:
        raise ConfigError(f"backfill: more than {MAX_BACKFILL} fire times; pick a shorter range")
    fires = [(t, spec.schedule.data_interval(t)) for t in times]
    record, counts = store.create_backfill(
        dag_id,
        fires,
        now,
        start=lo,
        end=hi,
        max_active_runs=spec.max_active_runs,
        triggered_by=who,
        conf=conf,
    )
    return (
        f"Backfill {record.id} of {dag_id} from {start} to {end}: {counts['created']} run(s) "
        f"created, {counts['kept']} existing left alone."
    )
