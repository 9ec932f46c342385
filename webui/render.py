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

from . import task_groups
from .formatting import duration, in_zone, iso, state_class, utc
from .graph_layout import Layout
from .mapped import counts_text

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

    def __init__(
        self,
        layout: Layout,
        outlets: Mapping[str, Iterable[str]] | None = None,
        groups: Mapping[str, str] | None = None,
        sensors: frozenset[str] = frozenset(),
        closed: Mapping[str, tuple[str, ...]] | None = None,
        expanded: frozenset[str] = frozenset(),
    ) -> None:
        self.layout = layout
        # issue 27 item 1: a closed task group is a node of its own (its path: its id)
        # standing for its tasks; ``expanded`` are the open groups, drawn as boxes
        self.closed = dict(closed or {})
        self.expanded = expanded
        self._sizes = {g: len(ts) for g, ts in self.closed.items()}
        self.sensors = sensors  # task ids drawn as sensors (class "sensor", issue 15)
        # issue 15: a task with outlets is drawn with an asset mark and named in its title
        outlets = {k: tuple(v) for k, v in (outlets or {}).items() if v}
        self._outlets = {
            k: (" has-outlets", str(escape(" · outlets: " + ", ".join(v))))
            for k, v in outlets.items()
        }
        # issue 14: open task groups (node -> group path) drawn as boxes (task_groups.py)
        self.groups = dict(groups or {})
        self._boxes = task_groups.boxes(layout.nodes, self.groups)
        x, y, w, h = 0.0, 0.0, layout.width, layout.height
        if self._boxes:  # room for the boxes around the groups' tasks
            x, y, w, h = task_groups.bounds(self._boxes, w, h)
        view = f"{x:g} {y:g} {w:g} {h:g}"
        self._head = (
            f'<svg class="graph" viewBox="{view}" width="{w:g}" height="{h:g}" role="img" '
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
                (n.x + n.w - 8, n.y + n.h / 2 + 4.5),
                f'<rect x="{n.x}" y="{n.y}" width="{n.w}" height="{n.h}" rx="7"></rect>'
                f'<rect class="node-stripe" x="{n.x}" y="{n.y}" width="6" height="{n.h}" '
                f'rx="3"></rect><text x="{n.x + 16}" y="{n.y + n.h / 2 + 4.5}">'
                f"{escape(self._label(n))}</text>"
                + (
                    f'<circle class="outlet-mark" cx="{n.x + n.w - 10}" cy="{n.y + 10}" r="4">'
                    "</circle>"
                    if n.id in outlets
                    else ""
                ),
                " sensor" if n.id in sensors else "",
            )
            for n in layout.nodes
        ]

    def _label(self, n: Any) -> str:
        if n.id not in self.closed:
            return n.label
        name = "▸ " + n.id.rsplit(".", 1)[-1]
        limit = int(n.w / 7.2) - 6  # room for the count
        return name if len(name) <= limit else name[: limit - 1] + "…"

    @property
    def nodes(self) -> list[Any]:
        return self.layout.nodes

    def svg(
        self,
        states: Mapping[str, str],
        task_href: str | None = None,
        counts: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Markup:
        """The SVG, nodes coloured by ``states`` (task_id -> state) and, with
        ``task_href`` (a URL prefix the quoted task id completes), linked. A mapped
        task's node (in ``counts``: its instances by state) shows how many instances
        it has, lists them by state in its title and links to its instance list."""
        of = _states()
        counts = counts or {}
        if self.closed:  # a closed group's node: its tasks' state and instances
            states = dict(states)
            for g, tasks in self.closed.items():
                states[g] = task_groups.group_state(states.get(t, "none") for t in tasks)
        parts = [
            self._head,
            self._edges,
            task_groups.svg_boxes(self._boxes, states, self.expanded, self._sizes),
        ]
        for task_id, eid, qid, (cx, cy), body, kind in self._nodes:
            if task_id in self.closed:
                parts.append(self._group_node(task_id, eid, (cx, cy), body, states, counts))
                continue
            cls, st = of(states.get(task_id, "none"))
            mapped = counts.get(task_id)
            extra, href = "", f"{task_href}{qid}"
            extra_cls, extra_title = self._outlets.get(task_id, ("", ""))  # issue 15
            extra_cls += kind  # " sensor" (issue 15)
            name = f"{eid} (sensor)" if kind else eid
            data = f'data-task-id="{eid}" data-state="{st}"'
            if task_id in self.groups:  # in an open group's box
                data += f' data-group="{escape(self.groups[task_id])}"'
            if mapped:  # issue 14: a mapped task's node counts its instances
                text = escape(counts_text(mapped))
                extra = (
                    f'<text class="map-count" x="{cx}" y="{cy}" text-anchor="end">'
                    f"[{sum(mapped.values())}]</text>"
                )
                head = f'<g class="node mapped {cls}{extra_cls}" {data} data-map-counts="{text}">'
                title = f"<title>{name}: {st} · {text}{extra_title}</title>"
                href += "/instances"
            else:
                head = f'<g class="node {cls}{extra_cls}" {data}>'
                title = f"<title>{name}: {st}{extra_title}</title>"
            if task_href is None:
                parts.append(f"{head}{title}{body}{extra}</g>")
            else:
                parts.append(f'{head}<a href="{href}">{title}{body}{extra}</a></g>')
        parts.append("</svg>")
        return Markup("".join(parts))

    def _group_node(
        self,
        path: str,
        epath: str,
        at: tuple[float, float],
        body: str,
        states: Mapping[str, str],
        counts: Mapping[str, Mapping[str, int]],
    ) -> str:
        """A closed group's node: its name, its task instances' count, the state that
        matters most among its tasks; a click opens it (``data-expand``, app.js)."""
        tasks = self.closed[path]
        state = states.get(path, "none")
        instances = sum(sum(counts[t].values()) if t in counts else 1 for t in tasks)
        by_state: dict[str, int] = {}
        for t in tasks:
            for s, n in counts[t].items() if t in counts else [(states.get(t, "none"), 1)]:
                by_state[s] = by_state.get(s, 0) + n
        text = escape(counts_text(by_state))
        after = escape(task_groups.toggled(self.expanded, path))
        cx, cy = at
        return (
            f'<g class="node group-node state-{escape(state)}" data-group-node="{epath}" '
            f'data-state="{escape(state)}" data-expand="{after}" tabindex="0" role="button" '
            f'aria-expanded="false" aria-label="open task group {epath}">'
            f"<title>task group {epath}: {escape(state)} · {len(tasks)} tasks · {text}</title>"
            f'{body}<text class="map-count" x="{cx}" y="{cy}" text-anchor="end">'
            f"[{instances}]</text></g>"
        )


def task_href(run_id: str) -> str:
    """The URL prefix of ``run_id``'s task pages: add a quoted task id."""
    return url_for("runs.task_detail", run_id=run_id, task_id="-")[:-1]


def grid_rows(
    tasks: Iterable[str],
    runs: list[Any],
    cells: Mapping[tuple[str, str], Any],
    task_href: Callable[[str], str],
    groups: Mapping[str, str] | None = None,
) -> Markup:
    """The grid's ``<tr>`` rows: one per task, one cell per run (oldest first).

    ``task_href(run_id)`` is the URL prefix of that run's task pages. With ``groups``
    (task_id -> task group path), a group's rows follow a header row of its own
    (issue 14, :func:`webui.task_groups.grid_plan`), folded until it is clicked.
    """
    of = _states()
    cols = [(r.run_id, str(escape(r.run_id)), str(escape(task_href(r.run_id)))) for r in runs]
    out = []
    plan = task_groups.grid_plan(tasks, groups) if groups else [("task", t, 0) for t in tasks]
    spans = task_groups.members(groups) if groups else {}
    for kind, task_id, depth in plan:
        if kind == "group":
            out.append(_group_row(task_id, depth, spans[task_id], cols, cells, of))
            continue
        eid, qid = str(escape(task_id)), _quote(task_id)
        row = [f'<tr><th class="task-name" title="{eid}">{eid}</th>']
        if depth:
            group = escape(groups[task_id])  # type: ignore[index]
            row = [
                f'<tr class="group-member hidden-in-group" data-group="{group}">'
                f'<th class="task-name depth-{depth}" title="{eid}">{eid}</th>'
            ]
        for run_id, erun, href in cols:
            c = cells.get((run_id, task_id))
            if c is None:
                row.append('<td><span class="cell cell-none"></span></td>')
                continue
            cls, st = of(c.state)
            if c.instances:  # a mapped task: the cell opens its instance list
                row.append(
                    f'<td><a class="cell mapped {cls}" data-state="{st}" '
                    f'href="{href}{qid}/instances" '
                    f'title="{eid} · {st} · {c.instances} instances: {c.counts}" '
                    f'aria-label="{eid} in {erun}: {st}, {c.instances} instances: {c.counts}">'
                    "</a></td>"
                )
                continue
            row.append(
                f'<td><a class="cell {cls}" data-state="{st}" href="{href}{qid}" '
                f'title="{eid} · {st} · try {c.try_number}" '
                f'aria-label="{eid} in {erun}: {st}"></a></td>'
            )
        row.append("</tr>")
        out.append("".join(row))
    return Markup("\n".join(out))


def _group_row(
    path: str, depth: int, tasks: list[str], cols: list, cells: Mapping, of: Callable
) -> str:
    """A task group's header row in the grid: the group's state in each run."""
    ep = str(escape(path))
    label = escape(path.rsplit(".", 1)[-1])
    hidden = " hidden-in-group" if depth else ""
    row = [
        f'<tr class="group-row collapsed{hidden}" data-group="{ep}">'
        f'<th class="task-name group-name depth-{depth}" title="task group {ep}" tabindex="0" '
        f'role="button" aria-expanded="false"><span class="group-toggle">▸</span> {label} '
        f'<span class="muted">({len(tasks)})</span></th>'
    ]
    for run_id, erun, _href in cols:
        found = [c.state for t in tasks if (c := cells.get((run_id, t))) is not None]
        if not found:
            row.append('<td><span class="cell cell-none"></span></td>')
            continue
        cls, st = of(task_groups.group_state(found))
        row.append(
            f'<td><span class="cell {cls} group-cell" data-state="{st}" '
            f'title="{ep} · {st}" aria-label="group {ep} in {erun}: {st}"></span></td>'
        )
    row.append("</tr>")
    return "".join(row)


def _pill(cls: str, state: str) -> str:
    return f'<span class="pill {cls}">{escape(state.replace("_", " "))}</span>'


def _timer(timezone: str) -> Callable[[Any], str]:
    """:func:`webui.formatting.time_tag` for a page of rows: each second formatted once
    (a wide run's 10,000 tries start within a few seconds), without Markup's per-call
    cost; its pieces are digits, dashes, colons and a zone abbreviation, escaped anyway."""
    memo: dict[int, str] = {}

    def fmt(value: Any) -> str:
        if value is None:
            return ""
        key = int(value.timestamp() // 1)
        found = memo.get(key)
        if found is None:
            at = value.replace(microsecond=0)
            found = memo[key] = (
                f'<time datetime="{iso(at)}" title="{utc(at)}">'
                f"{escape(in_zone(at, timezone))}</time>"
            )
        return found

    return fmt


def task_rows(
    tis: Iterable[Any],
    task_href: str,
    counts: Mapping[str, Mapping[str, int]] | None = None,
    timezone: str = "UTC",
) -> Markup:
    """The run page's task instance rows; ``task_href`` is the run's task URL prefix.
    A mapped task (in ``counts``) is one row linking to its instance list. Start times
    are shown in ``timezone`` (the DAG's), with UTC on hover."""
    counts = counts or {}
    of = _states()
    time_of = _timer(timezone)
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
        mapped = counts.get(ti.task_id)
        if mapped:
            n = sum(mapped.values())
            out.append(
                f'<tr data-task-id="{eid}" data-mapped="{n}"><td><a href="{href}'
                f'{_quote(ti.task_id)}/instances">{eid}</a> <span class="muted small">'
                f"[{n} instances: {escape(counts_text(mapped))}]</span></td><td>{pill}</td>"
                f"<td>≤ {ti.try_number} / {ti.max_tries}</td>"
                f'<td class="nowrap">{time_of(ti.start_date)}</td>'
                f'<td class="nowrap">{duration(ti.start_date, ti.end_date)}</td>'
                f"<td></td></tr>"
            )
            continue
        out.append(
            f'<tr data-task-id="{eid}"><td><a href="{href}'
            f'{_quote(ti.task_id)}">{eid}</a></td><td>{pill}</td>'
            f"<td>{ti.try_number} / {ti.max_tries}</td>"
            f'<td class="nowrap">{time_of(ti.start_date)}</td>'
            f'<td class="nowrap">{duration(ti.start_date, ti.end_date)}</td>'
            f"<td><code>{owner}</code></td></tr>"
        )
    return Markup("\n".join(out))
