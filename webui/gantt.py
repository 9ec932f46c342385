"""The Gantt chart of a run: each try's waits and run as labelled segments on one axis.

Pure: records in, bar geometry out. A task's row reads its tries in order:

- *queued*: from when the try could run (its upstream tasks' last end or the run's
  start for the first try; the end of the back-off, or the previous try's end, for a
  later one) until a worker claimed it;
- *back-off* (waiting for a retry): from a failed try's end for the retry delay the
  task's retry policy gave it (``backoff(task_id, map_index, failed)``), so the wait that
  is the task's own choice is not drawn as a wait for a worker; a lost try is queued
  again at once, without one;
- *running*: from the claim to the try's end (or ``now``), coloured by the try's state;
- *deferred*: a deferred try from when it deferred (``deferred_since``) until now;
- *rescheduled*: a sensor between pokes, from its last poke to the next one.

A mapped task is one summary row whose instances (the first ``instances`` of them)
can be unfolded, one row each; a task group has a header row spanning its tasks,
which follow it. The axis has round relative ticks and wall-clock ticks in the DAG's
timezone (``time_axis.py``).

>>> chart = gantt(run, task_lines, tries, order, upstream, now)  # doctest: +SKIP
>>> [b.kind for b in chart.rows[1].bars]                        # doctest: +SKIP
['queued', 'running', 'backoff', 'queued', 'running']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from . import task_groups
from .formatting import seconds_text
from .time_axis import clock_ticks, relative_ticks, step_for, tick_text

LABEL_W = 220
CHART_W = 640
ROW_H = 26
AXIS_H = 22  # the relative axis above the rows
CLOCK_H = 20  # the wall-clock axis under them
KINDS = ("queued", "backoff", "running", "deferred", "rescheduled")
KIND_WORDS = {"backoff": "waiting for retry", "rescheduled": "rescheduled, next poke"}
# a try that ended so: its task waits for the retry delay before the next try
RETRIED_STATES = frozenset({"failed", "timeout", "crashed"})

Backoff = Callable[[str, int, int], timedelta]  # (task_id, map_index, failed tries)


class Bar(NamedTuple):
    """One segment (a tuple: a 10,000-task run has 10,000 of them, or more)."""

    kind: str  # one of KINDS, or "group" (a group row's span)
    state: str  # the try's state, for the colour of running bars
    x: float
    w: float
    title: str


class Row(NamedTuple):
    task_id: str
    y: float
    state: str
    bars: list[Bar]
    kind: str = "task"  # "task" | "group" | "mapped" | "instance"
    depth: int = 0  # nesting in task groups
    parent: str = ""  # an instance row's task; a row's innermost group
    label: str = ""  # what the row's label says ("" : the task id)


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Gantt:
    """A run's chart: its rows (y in pixels), axes and size; ``gantt_svg`` draws it.

    >>> chart = gantt(run, lines, tries, order, upstream, now)  # doctest: +SKIP
    >>> [t.label for t in chart.ticks], chart.clock[0].label     # doctest: +SKIP
    (['0 s', '2 s', '4 s', '6 s', '8 s'], '01:00:00')
    """

    rows: list[Row]
    ticks: list[Tick]
    width: float
    height: float
    seconds: float
    clock: list[Tick] = field(default_factory=list)  # wall-clock ticks (the DAG's zone)
    timezone: str = "UTC"
    instances_shown: dict[str, int] = field(default_factory=dict)  # mapped task -> rows
    instances_total: dict[str, int] = field(default_factory=dict)  # mapped task -> all


Seg = tuple[str, str, datetime, datetime]


def segments(
    task_id: str,
    tries: list[Any],
    ready: datetime,
    now: datetime,
    *,
    line: Any = None,
    backoff: Backoff | None = None,
    deferred_since: datetime | None = None,
    map_index: int = -1,
) -> list[Seg]:
    """One task (or instance) row's segments (kind, state, from, to) from its tries in
    try order; ``ready``: when its first try could run; ``line``: its task line (its
    state and ``ready_at`` say whether a retry or poke is pending)."""
    segs: list[Seg] = []
    prev = None
    prev_end = ready
    lost = 0  # lost tries so far: they do not count in the back-off
    for t in tries:
        start = t.start_date
        if prev is not None:
            ready = prev_end
            if prev.state in RETRIED_STATES and backoff is not None:
                until = min(prev_end + backoff(task_id, map_index, prev.try_number - lost), start)
                if until > prev_end:
                    segs.append(("backoff", "up_for_retry", prev_end, until))
                    ready = until
        if start < ready:
            ready = start
        if start > ready:
            segs.append(("queued", "queued", ready, start))
        end = t.end_date or now
        if t.state == "deferred" and t.end_date is None and deferred_since is not None:
            since = min(max(deferred_since, start), now)
            segs.append(("running", "running", start, since))
            segs.append(("deferred", "deferred", since, now))
        else:
            segs.append(("running", t.state, start, end))
        if getattr(t, "lost_reason", None):
            lost += 1
        prev, prev_end = t, end
    state = getattr(line, "state", None)
    due = getattr(line, "ready_at", None)
    if (
        prev is not None
        and prev.end_date is not None
        and state in ("up_for_retry", "up_for_reschedule")
    ):
        kind = "backoff" if state == "up_for_retry" else "rescheduled"
        until = min(due, now) if due is not None else now
        if until > prev_end:
            segs.append((kind, state, prev_end, until))
        if due is not None and now > due:
            segs.append(("queued", "queued", max(due, prev_end), now))
    return segs


def _by_task(tries: list[Any]) -> dict[Any, list[Any]]:
    """Tries by (task_id, map_index), each list in try order (one pass)."""
    out: dict[Any, list[Any]] = {}
    for t in tries:
        key = (t.task_id, t.map_index)
        found = out.get(key)
        if found is None:
            out[key] = [t]
        else:
            found.append(t)
    for found in out.values():
        if len(found) > 1:
            found.sort(key=lambda t: t.try_number)
    return out


def gantt(
    run: Any,
    tis: list[Any],
    tries: list[Any],
    order: list[str],
    upstream: Mapping[str, Any],
    now: datetime,
    *,
    backoff: Backoff | None = None,
    groups: Mapping[str, str] | None = None,
    instances: tuple[list[Any], list[Any]] = ([], []),
    deferred_since: Mapping[tuple[str, int], datetime] | None = None,
    timezone: str = "UTC",
    map_counts: Mapping[str, Mapping[str, int]] | None = None,
) -> Gantt:
    """The chart of a run: rows in ``order`` (task groups' header rows among them, by
    ``groups``: task -> group path); ``upstream`` maps task -> upstream ids; ``tis`` and
    ``tries`` are its task lines and tries (a mapped task's summed up in one of each);
    ``instances``: the task lines and tries of the mapped instances to unfold."""
    by_task = _by_task(tries)
    end_of = {ti.task_id: ti.end_date for ti in tis}
    line_of = {ti.task_id: ti for ti in tis}
    since = deferred_since or {}
    origin = run.start_date or min((t.start_date for t in tries), default=now)

    def ready_of(task_id: str) -> datetime:
        ready = origin
        for u in upstream.get(task_id, ()):
            up_end = end_of.get(u)
            if up_end is not None and up_end > ready:
                ready = up_end
        return ready

    inst_lines, inst_tries = instances
    inst_by = _by_task(inst_tries)
    inst_rows: dict[str, list[Any]] = {}
    for line in inst_lines:
        inst_rows.setdefault(line.task_id, []).append(line)

    plan = task_groups.grid_plan(order, groups or {})
    # (row id, kind, depth, parent, segments, label) in the chart's order
    spans: list[tuple[str, str, int, str, list[Seg], str]] = []
    group_of = groups or {}
    for kind, name, depth in plan:
        if kind == "group":
            spans.append(
                (name, "group", depth, name.rpartition(".")[0], [], name.rpartition(".")[2])
            )
            continue
        ready = ready_of(name)
        row_tries = by_task.get((name, -1)) or by_task.get((name, 0), [])
        line = line_of.get(name)
        mapped = name in inst_rows or (map_counts is not None and name in map_counts)
        segs = segments(  # a mapped task's row sums its instances up: no back-off of its own
            name, row_tries, ready, now, line=line, backoff=None if mapped else backoff,
            deferred_since=since.get((name, -1)),
        )  # fmt: skip
        spans.append(
            (name, "mapped" if mapped else "task", depth, group_of.get(name, ""), segs, "")
        )
        for inst in inst_rows.get(name, ()):
            segs = segments(
                name, inst_by.get((name, inst.map_index), []), ready, now, line=inst,
                backoff=backoff, deferred_since=since.get((name, inst.map_index)),
                map_index=inst.map_index,
            )  # fmt: skip
            spans.append((f"{name}[{inst.map_index}]", "instance", depth + 1, name, segs, ""))
    last = origin
    for _, _, _, _, segs, _ in spans:
        for seg in segs:
            if seg[3] > last:
                last = seg[3]
    total = max((last - origin).total_seconds(), 1.0)
    step = step_for(total)
    total = math.ceil(total / step - 1e-9) * step  # the last tick at the chart's end
    scale = CHART_W / total

    rows: list[Row] = []
    y = AXIS_H
    state_of = {ti.task_id: ti.state for ti in tis}
    inst_state = {(i.task_id, i.map_index): i.state for i in inst_lines}
    members = task_groups.members(group_of) if group_of else {}
    extent: dict[str, tuple[datetime, datetime]] = {}  # a task row's first and last instant
    if members:
        for row_id, kind, _, _, segs, _ in spans:
            if segs and kind in ("task", "mapped"):
                extent[row_id] = (segs[0][2], max(seg[3] for seg in segs))
    for row_id, kind, depth, parent, segs, label in spans:
        bars = [_bar(row_id, s, origin, scale) for s in segs]
        if kind == "group":
            ids = members.get(row_id, [])
            ends = [extent[t] for t in ids if t in extent]
            state = task_groups.group_state(state_of.get(t, "scheduled") for t in ids)
            if ends:
                a, b = min(e[0] for e in ends), max(e[1] for e in ends)
                bars = [_bar(row_id, ("group", state, a, b), origin, scale)]
        elif kind == "instance":
            task_id, _, idx = row_id.rpartition("[")
            state = inst_state.get((task_id, int(idx[:-1])), "scheduled")
        else:
            state = state_of.get(row_id, "scheduled")
        rows.append(Row(row_id, y, state, bars, kind, depth, parent, label))
        if kind != "instance":  # instance rows are folded away until asked for
            y += ROW_H
    ticks = [Tick(LABEL_W + s * scale, tick_text(s, step)) for s in relative_ticks(total)]
    clock = [Tick(LABEL_W + s * scale, text) for s, text in clock_ticks(origin, total, timezone)]
    shown = {t: len(v) for t, v in inst_rows.items()}
    totals = {t: sum(c.values()) for t, c in (map_counts or {}).items()}
    height = y + CLOCK_H + 4
    return Gantt(rows, ticks, LABEL_W + CHART_W + 40, height, total, clock, timezone, shown, totals)


def _bar(row_id: str, seg: Seg, origin: datetime, scale: float) -> Bar:
    kind, state, a, b = seg
    secs = (b - a).total_seconds()
    title = f"{row_id}: {KIND_WORDS.get(kind, kind)} {seconds_text(secs)}"
    if kind in ("running", "group"):
        title = f"{title} ({state.replace('_', ' ')})"
    w = secs * scale
    x = LABEL_W + (a - origin).total_seconds() * scale
    return Bar(kind, state, x, w if w > 2.0 else 2.0, title)
