"""The Gantt chart's SVG: axes, rows and segments of a :class:`webui.gantt.Gantt`.

Every row is a ``<g class="gantt-row">`` moved into place by its ``transform``, so
static/app.js can unfold a mapped task's instance rows (or fold a task group's rows)
by laying the visible rows out again, without a request. Every text is escaped.

>>> gantt_svg(chart)  # doctest: +SKIP
Markup('<svg class="gantt" ...')
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape

from . import task_groups
from .formatting import state_class
from .gantt import AXIS_H, CLOCK_H, ROW_H, Gantt


def gantt_svg(chart: Gantt, href: str | None = None) -> Markup:
    """The chart as one ``<svg>``; ``href``: the prefix of the task pages' URLs
    (``render.task_href``), to link each task's label (and each instance's)."""
    classes: dict[tuple[str, str], str] = {}
    h = chart.height
    href = str(escape(href)) if href is not None else None  # a URL prefix: escaped once
    out = [
        f'<svg class="gantt" viewBox="0 0 {chart.width} {h}" width="{chart.width}" '
        f'height="{h}" role="img" aria-label="Gantt chart" data-row-h="{ROW_H}" '
        f'data-axis-h="{AXIS_H}" data-clock-h="{CLOCK_H}" data-seconds="{chart.seconds}">'
    ]
    out.append('<g class="gantt-axis">')
    for t in chart.ticks:
        out.append(
            f'<line class="tick" x1="{t.x}" x2="{t.x}" y1="16" y2="100%"></line>'
            f'<text class="tick-label" x="{t.x}" y="12">{escape(t.label)}</text>'
        )
    out.append("</g>")
    for row in chart.rows:
        out.append(_row(row, classes, chart, href))
    bottom = h - CLOCK_H - 4
    out.append(
        f'<g class="gantt-clock" transform="translate(0,{bottom})">'
        f'<text class="clock-zone" x="4" y="14">{escape(chart.timezone)}</text>'
    )
    for t in chart.clock:
        out.append(
            f'<line class="clock-tick" x1="{t.x}" x2="{t.x}" y1="0" y2="4"></line>'
            f'<text class="clock-label" x="{t.x}" y="15">{escape(t.label)}</text>'
        )
    out.append("</g></svg>")
    return Markup("".join(out))


_PLAIN = re.compile(r"[A-Za-z0-9_.~-]*\Z").match  # ids that need no quoting or escaping


def _row(row: Any, classes: dict, chart: Gantt, href: str | None) -> str:
    """One row's ``<g>``. Plain task ids (most: ids allow [A-Za-z0-9_.-]) skip the
    escaping and quoting, which a 10,000-task chart would pay 10,000 times each."""
    task_id, kind = row.task_id, row.kind
    plain = _PLAIN(task_id) is not None
    rid = task_id if plain else str(escape(task_id))
    state = classes.get(row.state)
    if state is None:
        state = classes[row.state] = str(escape(row.state))
    head = (
        f'<g class="gantt-row gantt-{kind}" data-task-id="{rid}" '
        f'data-state="{state}" transform="translate(0,{row.y})"'
    )
    if kind == "instance":
        head += f' data-in="{escape(row.parent)}" display="none"'
    elif row.parent:
        head += f' data-in="{escape(" ".join(task_groups.ancestors(row.parent)))}"'
    indent = 4 + 14 * row.depth
    if kind == "task" and href is not None:
        link = task_id if plain else quote(task_id, safe="")
        label = (
            f'<a href="{href}{link}"><text class="gantt-label" x="{indent}" y="17">{rid}</text></a>'
        )
    elif kind == "instance" and href is not None:
        base, _, index = task_id.rpartition("[")
        link = f"{quote(base, safe='')}/map/{index[:-1]}"
        label = (
            f'<a href="{href}{link}"><text class="gantt-label" x="{indent}" y="17">{rid}</text></a>'
        )
    elif kind == "mapped":
        n = chart.instances_shown.get(task_id, 0)
        total = max(chart.instances_total.get(task_id, n), n)
        words = f"{total} instance{'s' if total != 1 else ''}"
        if total > n:
            words += f", the first {n} here"
        label = (
            f'<text class="gantt-label gantt-toggle" x="{indent}" y="17" role="button" '
            f'tabindex="0" aria-expanded="false" data-instances="{n}">'
            f'<tspan class="caret">▸</tspan> {rid} <tspan class="muted-text">[{words}]'
            "</tspan></text>"
        )
    elif kind == "group":
        label = (
            f'<text class="gantt-label gantt-group-label gantt-toggle" x="{indent}" y="17" '
            f'role="button" tabindex="0" aria-expanded="true"><tspan class="caret">▾</tspan> '
            f"{escape(row.label or task_id)}</text>"
        )
    else:
        label = f'<text class="gantt-label" x="{indent}" y="17">{rid}</text>'
    parts = [head, ">", label]
    for b in row.bars:
        cls = classes.get((b.kind, b.state))
        if cls is None:
            cls = classes[(b.kind, b.state)] = f"bar-{escape(b.kind)} {state_class(b.state)}"
        title = b.title if _PLAIN_TITLE(b.title) else escape(b.title)
        parts.append(
            f'<rect class="bar {cls}" x="{b.x}" y="5" width="{b.w}" height="16" rx="3">'
            f"<title>{title}</title></rect>"
        )
    parts.append("</g>")
    return "".join(parts)


_PLAIN_TITLE = re.compile(r"[^<>&\"']*\Z").match  # a title with nothing to escape
