"""What ``bench/many_dags.py`` reads from the store, during its window and after it.

Read-only queries on the bench's own fresh database: the DAG count, each fire time's
runs as they are committed, the task instances by state, and at the end the runs with
their task's start and end (see the figures table in docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from orchestrator.store.core import models as m

FINISH_WINDOW_S = 60.0  # a minute's task should have ended this long after its fire


def leader_pid(store: Any) -> int | None:
    lease, s = m.scheduler_lease, m.schedulers
    with store.read() as conn:
        row = conn.execute(select(s.c.pid).join(lease, lease.c.holder == s.c.scheduler_id)).first()
    return None if row is None else row.pid


@dataclass
class Parsing:
    """When the bench, polling each second, first saw a DAG stored and then all of them."""

    count: int = 0
    first_s: float | None = None
    last_s: float | None = None

    def saw(self, count: int, expected: int, elapsed: float) -> None:
        self.count = count
        if count and self.first_s is None:
            self.first_s = elapsed
        if count >= expected:
            self.last_s = elapsed


class MinuteWatch:
    """When each fire time's runs became visible (committed), as the bench polls them.

    ``created_at`` is the scheduler tick's ``now``, stamped on every run the tick
    creates, however long the tick then takes to commit them; this watch sees the
    commit. From each fire time on, it counts that fire time's runs every 0.2 s until
    there are as many as DAGs stored (or 60 s pass).
    """

    def __init__(self) -> None:
        self.since: datetime | None = None  # when all DAGs were first seen stored
        self.fires: dict[datetime, dict[str, Any]] = {}

    def open(self) -> bool:
        return any(f["all_s"] is None and not f["gave_up"] for f in self.fires.values())

    def poll(self, store: Any, now: datetime, dags: int, all_stored: bool) -> None:
        if all_stored and self.since is None:
            self.since = now
        fire = now.replace(second=0, microsecond=0)
        if self.since is not None and fire > self.since and fire not in self.fires:
            self.fires[fire] = {"dags": dags, "at_1s": 0, "all_s": None, "gave_up": False}
        for at, f in self.fires.items():
            if f["all_s"] is not None or f["gave_up"]:
                continue
            after = (now - at).total_seconds()
            count = runs_of(store, at)
            if after <= 1.0:
                f["at_1s"] = count
            if count >= f["dags"]:
                f["all_s"] = after
            elif after > FINISH_WINDOW_S:
                f["gave_up"] = True

    def figures(self) -> list[dict[str, Any]]:
        return [
            {"fire": at.isoformat(), "dags": f["dags"], "visible_at_1s": f["at_1s"],
             "all_visible_s": f["all_s"], "gave_up": f["gave_up"]}
            for at, f in self.fires.items()
        ]  # fmt: skip


def runs_of(store: Any, fire: datetime) -> int:
    r = m.dag_runs
    with store.read() as conn:
        return conn.execute(
            select(func.count()).select_from(r).where(r.c.logical_date == fire)
        ).scalar_one()


def dag_count(store: Any) -> int:
    with store.read() as conn:
        return conn.execute(select(func.count()).select_from(m.dags)).scalar_one()


def task_states(store: Any) -> dict[str, int]:
    ti = m.task_instances
    with store.read() as conn:
        rows = conn.execute(select(ti.c.state, func.count()).group_by(ti.c.state)).all()
    return {state: n for state, n in rows}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100), None of nothing."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def read_figures(store: Any, ended: datetime) -> dict[str, Any]:
    """What the store says about the run: DAGs, runs, lateness, finishing, leaders."""
    r, ti, ev = m.dag_runs, m.task_instances, m.events
    with store.read() as conn:
        stored = conn.execute(select(func.count()).select_from(m.dags)).scalar_one()
        errors = conn.execute(select(func.count()).select_from(m.import_errors)).scalar_one()
        runs = conn.execute(
            select(r.c.id, r.c.dag_id, r.c.logical_date, r.c.data_interval_end, r.c.created_at)
        ).all()
        tis = {
            t.run_pk: t for t in conn.execute(select(ti.c.run_pk, ti.c.start_date, ti.c.end_date))
        }
        elections = conn.execute(
            select(ev.c.message)
            .where(ev.c.kind == "leader_acquired", ev.c.at <= ended)
            .order_by(ev.c.id)
        ).all()
    first_fire: dict[str, datetime] = {}
    for run in runs:
        if run.dag_id not in first_fire or run.logical_date < first_fire[run.dag_id]:
            first_fire[run.dag_id] = run.logical_date
    per_fire = Counter((run.dag_id, run.logical_date) for run in runs)
    later = [run for run in runs if run.logical_date != first_fire[run.dag_id]]
    lateness = [(run.created_at - run.logical_date).total_seconds() for run in later]
    cutoff = ended - timedelta(seconds=FINISH_WINDOW_S)
    due = [run for run in later if run.logical_date < cutoff]

    def after_fire(run: Any, column: str) -> float | None:
        at = getattr(tis[run.id], column) if run.id in tis else None
        return None if at is None else (at - run.logical_date).total_seconds()

    ended_after = [after_fire(run, "end_date") for run in due]
    on_time = sum(1 for x in ended_after if x is not None and x <= FINISH_WINDOW_S)
    starts = [x for run in later if (x := after_fire(run, "start_date")) is not None]
    holders = [re.search(r"scheduler (\S+) became leader", e.message) for e in elections]
    changes = sum(1 for a, b in zip(holders, holders[1:], strict=False) if a and b and a[1] != b[1])
    return {
        "dags_stored": stored,
        "import_errors": errors,
        "runs": len(runs),
        "runs_after_first": len(later),
        "duplicate_runs": sum(n - 1 for n in per_fire.values() if n > 1),
        "interval_end_differs": sum(1 for run in runs if run.data_interval_end != run.logical_date),
        "lateness_p50_s": percentile(lateness, 50),
        "lateness_p99_s": percentile(lateness, 99),
        "lateness_max_s": max(lateness) if lateness else None,
        "task_start_p50_s": percentile(starts, 50),
        "task_start_p99_s": percentile(starts, 99),
        "task_start_max_s": max(starts, default=None),
        "runs_due": len(due),
        "finished_within_60s": on_time,
        "finished_within_60s_pct": 100.0 * on_time / len(due) if due else None,
        "leader_elections": len(elections),
        "leader_changes": changes,
    }


def watch_summary(minutes: list[dict[str, Any]]) -> dict[str, Any]:
    """The worst minute: the longest until all its runs were visible, the fewest at 1 s."""
    done = [w["all_visible_s"] for w in minutes if w["all_visible_s"] is not None]
    shares = [100.0 * w["visible_at_1s"] / w["dags"] for w in minutes if w["dags"]]
    return {
        "minutes_watched": len(minutes),
        # not all there 60 s after the fire; a minute still open at the end is neither
        "minutes_never_all_visible": sum(1 for w in minutes if w["gave_up"]),
        "all_visible_max_s": max(done, default=None),
        "visible_at_1s_min_pct": min(shares, default=None),
    }
