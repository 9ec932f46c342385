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
from typing import Any

LABEL_W = 180
CHART_W = 640
ROW_H = 26
AXIS_H = 22


@dataclass(frozen=True)
class Bar:
    kind: str  # "queued" | "running"
    state: str  # the try's state, for the colour of running bars
    x: float
    w: float
    title: str


@dataclass(frozen=True)
class Row:
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


def _fmt(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    s = int(round(seconds))
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


def gantt(
    run: Any, tis: list[Any], tries: list[Any], order: list[str], upstream: dict, now: datetime
) -> Gantt:
    """Bars for each task (rows in ``order``); ``upstream`` maps task -> upstream ids."""
    by_task: dict[str, list[Any]] = {}
    for t in sorted(tries, key=lambda t: (t.task_id, t.try_number)):
        by_task.setdefault(t.task_id, []).append(t)
    end_of = {ti.task_id: ti.end_date for ti in tis}
    state_of = {ti.task_id: ti.state for ti in tis}
    origin = run.start_date or min((t.start_date for t in tries), default=now)
    spans: list[tuple[str, list[tuple[str, str, datetime, datetime]]]] = []
    last = origin
    for task_id in order:
        segs = []
        prev_end = None
        for t in by_task.get(task_id, []):
            if prev_end is None:
                ups = [end_of.get(u) for u in upstream.get(task_id, ())]
                ready = max([u for u in ups if u is not None] + [origin])
            else:
                ready = prev_end
            ready = min(ready, t.start_date)
            end = t.end_date or now
            if t.start_date > ready:
                segs.append(("queued", "queued", ready, t.start_date))
            segs.append(("running", t.state, t.start_date, end))
            prev_end = end
            last = max(last, end)
        spans.append((task_id, segs))
    total = max(_secs(origin, last), 1.0)
    scale = CHART_W / total
    rows = []
    for i, (task_id, segs) in enumerate(spans):
        bars = [
            Bar(
                kind,
                state,
                LABEL_W + _secs(origin, a) * scale,
                max(_secs(a, b) * scale, 2.0),
                f"{task_id}: {kind} {_fmt(_secs(a, b))}"
                + (f" ({state})" if kind == "running" else ""),
            )
            for kind, state, a, b in segs
        ]
        rows.append(Row(task_id, AXIS_H + i * ROW_H, state_of.get(task_id, "scheduled"), bars))
    ticks = [Tick(LABEL_W + CHART_W * k / 4, _fmt(total * k / 4)) for k in range(5)]
    return Gantt(rows, ticks, LABEL_W + CHART_W + 40, AXIS_H + len(rows) * ROW_H + 4, total)
