"""Linear-time HTML for the parts of a page that grow with the DAG: graph, grid, tasks, Gantt.

A 10,000-task DAG has 10,000 graph nodes and, over a few runs, tens of thousands of
grid cells. Drawn by a Jinja macro with a ``url_for`` per node and per cell, such a
page took seconds; here each node and cell is one string format over pieces escaped
once (per task, per run, per state), so a page costs a few microseconds per task.
The markup is the same the templates used to write: every text is escaped
(:func:`markupsafe.escape`), every link is built from the route's own prefix.

>>> drawing = Drawing(layout(graph))                                  # doctest: +SKIP
>>> drawing.svg({"load": "failed"}, task_href="/runs/r1/tasks/")      # doctest: +SKIP
Markup('<svg class="graph" ...')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from flask import url_for
from markupsafe import Markup, escape

from .formatting import duration, state_class, utc
from .graph_layout import Layout

_DEFS = (
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
    'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
    'class="arrow-head"></path></marker></defs>'
)


# what quote(..., safe="") leaves as it is: every task id the DAG API accepts
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*\Z").match


def _quote(text: str) -> str:
    """``quote(text, safe="")``, without its cost for a text it would not change."""
    return text if _UNQUOTED(text) else quote(text, safe="")


def _states() -> Callable[[str], tuple[str, str]]:
    """state -> (its CSS class, the state escaped), each worked out once per page."""
    memo: dict[str, tuple[str, str]] = {}

    def of(state: str) -> tuple[str, str]:
        found = memo.get(state)
        if found is None:
            found = memo[state] = (state_class(state), str(escape(state)))
        return found

    return of


class Drawing:
    """A layout ready to draw: what does not depend on the run is escaped once."""

    def __init__(self, layout: Layout, sensors: frozenset[str] = frozenset()) -> None:
        self.layout = layout
        self.sensors = sensors  # task ids drawn as sensors (class "sensor", issue 15)
        self._head = (
            f'<svg class="graph" viewBox="0 0 {layout.width} {layout.height}" '
            f'width="{layout.width}" height="{layout.height}" role="img" '
            f'aria-label="task graph">{_DEFS}'
        )
        self._edges = "".join(
            f'<path class="edge" d="{escape(e.path)}" marker-end="url(#arrow)" '
            f'data-source="{escape(e.source)}" data-target="{escape(e.target)}"></path>'
            for e in layout.edges
        )
        self._nodes = [
            (
                n.id,
                str(escape(n.id)),
                quote(n.id, safe=""),
                f'<rect x="{n.x}" y="{n.y}" width="{n.w}" height="{n.h}" rx="7"></rect>'
                f'<rect class="node-stripe" x="{n.x}" y="{n.y}" width="6" height="{n.h}" '
                f'rx="3"></rect><text x="{n.x + 16}" y="{n.y + n.h / 2 + 4.5}">'
                f"{escape(n.label)}</text>",
                " sensor" if n.id in sensors else "",
            )
            for n in layout.nodes
        ]

    @property
    def nodes(self) -> list[Any]:
        return self.layout.nodes

    def svg(self, states: Mapping[str, str], task_href: str | None = None) -> Markup:
        """The SVG, nodes coloured by ``states`` (task_id -> state) and, with
        ``task_href`` (a URL prefix the quoted task id completes), linked."""
        of = _states()
        parts = [self._head, self._edges]
        for task_id, eid, qid, body, kind in self._nodes:
            cls, st = of(states.get(task_id, "none"))
            head = f'<g class="node {cls}{kind}" data-task-id="{eid}" data-state="{st}">'
            title = f"<title>{eid}{' (sensor)' if kind else ''}: {st}</title>"
            if task_href is None:
                parts.append(f"{head}{title}{body}</g>")
            else:
                parts.append(f'{head}<a href="{task_href}{qid}">{title}{body}</a></g>')
        parts.append("</svg>")
        return Markup("".join(parts))


def task_href(run_id: str) -> str:
    """The URL prefix of ``run_id``'s task pages: add a quoted task id."""
    return url_for("runs.task_detail", run_id=run_id, task_id="-")[:-1]


def grid_rows(
    tasks: Iterable[str],
    runs: list[Any],
    cells: Mapping[tuple[str, str], Any],
    task_href: Callable[[str], str],
) -> Markup:
    """The grid's ``<tr>`` rows: one per task, one cell per run (oldest first).

    ``task_href(run_id)`` is the URL prefix of that run's task pages.
    """
    of = _states()
    cols = [(r.run_id, str(escape(r.run_id)), str(escape(task_href(r.run_id)))) for r in runs]
    out = []
    for task_id in tasks:
        eid, qid = str(escape(task_id)), _quote(task_id)
        row = [f'<tr><th class="task-name" title="{eid}">{eid}</th>']
        for run_id, erun, href in cols:
            c = cells.get((run_id, task_id))
            if c is None:
                row.append('<td><span class="cell cell-none"></span></td>')
                continue
            cls, st = of(c.state)
            row.append(
                f'<td><a class="cell {cls}" data-state="{st}" href="{href}{qid}" '
                f'title="{eid} · {st} · try {c.try_number}" '
                f'aria-label="{eid} in {erun}: {st}"></a></td>'
            )
        row.append("</tr>")
        out.append("".join(row))
    return Markup("\n".join(out))


def _pill(cls: str, state: str) -> str:
    return f'<span class="pill {cls}">{escape(state.replace("_", " "))}</span>'


def task_rows(tis: Iterable[Any], task_href: str) -> Markup:
    """The run page's task instance rows; ``task_href`` is the run's task URL prefix."""
    of = _states()
    pills: dict[str, str] = {}
    owners: dict[str | None, str] = {}  # a run has a few workers and 10,000 tasks
    href = escape(task_href)
    out = []
    for ti in tis:
        eid = escape(ti.task_id)
        pill = pills.get(ti.state)
        if pill is None:
            pill = pills[ti.state] = _pill(of(ti.state)[0], ti.state)
        owner = owners.get(ti.owner)
        if owner is None:
            owner = owners[ti.owner] = str(escape(ti.owner or ""))
        out.append(
            f'<tr data-task-id="{eid}"><td><a href="{href}'
            f'{_quote(ti.task_id)}">{eid}</a></td><td>{pill}</td>'
            f"<td>{ti.try_number} / {ti.max_tries}</td>"
            f'<td class="nowrap">{utc(ti.start_date, seconds=True)}</td>'
            f'<td class="nowrap">{duration(ti.start_date, ti.end_date)}</td>'
            f"<td><code>{owner}</code></td></tr>"
        )
    return Markup("\n".join(out))


def gantt_rows(chart: Any) -> Markup:
    """The Gantt chart's labels and bars (:class:`webui.gantt.Gantt` rows)."""
    of = _states()
    kinds: dict[tuple[str, str], str] = {}  # (kind, state) -> the bar's escaped classes
    out = []
    for row in chart.rows:
        out.append(f'<text class="gantt-label" x="4" y="{row.y + 17}">{escape(row.task_id)}</text>')
        bar_y = row.y + 5
        for b in row.bars:
            cls = kinds.get((b.kind, b.state))
            if cls is None:
                cls = kinds[(b.kind, b.state)] = f"bar-{escape(b.kind)} {of(b.state)[0]}"
            out.append(
                f'<rect class="bar {cls}" x="{b.x}" '
                f'y="{bar_y}" width="{b.w}" height="16" rx="3">'
                f"<title>{escape(b.title)}</title></rect>"
            )
    return Markup("\n".join(out))
