"""The Gantt chart of a run's task tries: queued and running bars on one time axis.

Pure: records in, bar geometry out. A try is *queued* from when it could first run
(its upstream tasks' last end, or the run's start, for the first try; the previous
try's end for a retry) until a worker claimed it, and *running* from then until it
ended (or ``now`` while it runs).

>>> chart = gantt(run, task_instances, tries, order, now)   # doctest: +SKIP
>>> chart.rows[0].bars[0].kind                               # doctest: +SKIP
'queued'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from .formatting import seconds_text

LABEL_W = 180
CHART_W = 640
ROW_H = 26
AXIS_H = 22


class Bar(NamedTuple):
    """One bar (a tuple: a 10,000-task run has 10,000 of them, or more)."""

    kind: str  # "queued" | "running"
    state: str  # the try's state, for the colour of running bars
    x: float
    w: float
    title: str


class Row(NamedTuple):
    task_id: str
    y: float
    state: str
    bars: list[Bar]


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Gantt:
    rows: list[Row]
    ticks: list[Tick]
    width: float
    height: float
    seconds: float


def _secs(a: datetime, b: datetime) -> float:
    return (b - a).total_seconds()


_fmt = seconds_text  # one duration format everywhere (webui/formatting.py)


def gantt(
    run: Any, tis: list[Any], tries: list[Any], order: list[str], upstream: dict, now: datetime
) -> Gantt:
    """Bars for each task (rows in ``order``); ``upstream`` maps task -> upstream ids."""
    by_task: dict[str, list[Any]] = {}
    for t in tries:  # one pass; a task's tries then in try order
        found = by_task.get(t.task_id)
        if found is None:
            by_task[t.task_id] = [t]
        else:
            found.append(t)
    for found in by_task.values():
        if len(found) > 1:
            found.sort(key=lambda t: t.try_number)
    end_of = {ti.task_id: ti.end_date for ti in tis}
    state_of = {ti.task_id: ti.state for ti in tis}
    origin = run.start_date or min((t.start_date for t in tries), default=now)
    spans: list[tuple[str, list[tuple[str, str, datetime, datetime]]]] = []
    last = origin
    no_tries: list[Any] = []
    for task_id in order:
        segs = []
        prev_end = None
        for t in by_task.get(task_id, no_tries):
            start = t.start_date
            if prev_end is None:
                ready = origin
                for u in upstream.get(task_id, ()):
                    up_end = end_of.get(u)
                    if up_end is not None and up_end > ready:
                        ready = up_end
            else:
                ready = prev_end
            if start < ready:
                ready = start
            end = t.end_date or now
            if start > ready:
                segs.append(("queued", "queued", ready, start))
            segs.append(("running", t.state, start, end))
            prev_end = end
            if end > last:
                last = end
        spans.append((task_id, segs))
    total = max(_secs(origin, last), 1.0)
    scale = CHART_W / total
    rows = []
    y = AXIS_H
    for task_id, segs in spans:
        bars = []
        for kind, state, a, b in segs:
            secs = (b - a).total_seconds()
            title = f"{task_id}: {kind} {_fmt(secs)}"
            if kind == "running":
                title = f"{title} ({state})"
            w = secs * scale
            x = LABEL_W + (a - origin).total_seconds() * scale
            bars.append(Bar(kind, state, x, w if w > 2.0 else 2.0, title))
        rows.append(Row(task_id, y, state_of.get(task_id, "scheduled"), bars))
        y += ROW_H
    ticks = [Tick(LABEL_W + CHART_W * k / 4, _fmt(total * k / 4)) for k in range(5)]
    return Gantt(rows, ticks, LABEL_W + CHART_W + 40, AXIS_H + len(rows) * ROW_H + 4, total)
