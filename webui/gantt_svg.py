"""The Gantt chart's SVG: axes, rows and segments of a :class:`webui.gantt.Gantt`.

Every row is a ``<g class="gantt-row">`` moved into place by its ``transform``, so
static/app.js can unfold a mapped task's instance rows (or fold a task group's rows)
by laying the visible rows out again, without a request. Every text is escaped.

>>> gantt_svg(chart)  # doctest: +SKIP
Markup('<svg class="gantt" ...')
"""

from __future__ import annotations

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


def _row(row: Any, classes: dict, chart: Gantt, href: str | None) -> str:
    rid = escape(row.task_id)
    groups = (
        " ".join(task_groups.ancestors(row.parent)) if row.parent and row.kind != "instance" else ""
    )
    if row.kind == "instance":
        groups = escape(row.parent)
    attrs = (
        f'class="gantt-row gantt-{row.kind}" data-task-id="{rid}" data-kind="{row.kind}" '
        f'data-state="{escape(row.state)}" transform="translate(0,{row.y})"'
    )
    if groups:
        attrs += f' data-in="{escape(groups)}"'
    if row.kind == "instance":
        attrs += ' display="none"'
    indent = 4 + 14 * row.depth
    parts = [f"<g {attrs}>"]
    if row.kind == "mapped":
        n = chart.instances_shown.get(row.task_id, 0)
        parts.append(
            f'<text class="gantt-label gantt-toggle" x="{indent}" y="17" role="button" '
            f'tabindex="0" aria-expanded="false" data-instances="{n}">'
            f'<tspan class="caret">▸</tspan> {rid} <tspan class="muted-text">[{n} '
            f"instance{'s' if n != 1 else ''}]</tspan></text>"
        )
    elif row.kind == "group":
        parts.append(
            f'<text class="gantt-label gantt-group-label gantt-toggle" x="{indent}" y="17" '
            f'role="button" tabindex="0" aria-expanded="true"><tspan class="caret">▾</tspan> '
            f"{escape(row.label or row.task_id)}</text>"
        )
    elif href is not None and row.kind in ("task", "instance"):
        link = quote(row.task_id, safe="")
        if row.kind == "instance":
            task_id, _, index = row.task_id.rpartition("[")
            link = f"{quote(task_id, safe='')}/map/{index[:-1]}"
        parts.append(
            f'<a href="{escape(href + link)}"><text class="gantt-label" x="{indent}" '
            f'y="17">{rid}</text></a>'
        )
    else:
        parts.append(f'<text class="gantt-label" x="{indent}" y="17">{rid}</text>')
    for b in row.bars:
        cls = classes.get((b.kind, b.state))
        if cls is None:
            cls = classes[(b.kind, b.state)] = f"bar-{escape(b.kind)} {state_class(b.state)}"
        parts.append(
            f'<rect class="bar {cls}" x="{b.x}" y="5" width="{b.w}" height="16" rx="3">'
            f"<title>{escape(b.title)}</title></rect>"
        )
    parts.append("</g>")
    return "".join(parts)
