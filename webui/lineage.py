"""The asset lineage graph (issue 27 item 8): producer DAGs -> assets -> consumer DAGs.

Pure: asset records in, an SVG out (no Flask, no database). Each DAG that produces an
asset (a task's ``outlets``) points at it, and the asset points at each DAG scheduled on
it; the graph is laid out like a DAG's own (:mod:`webui.graph_layout`). An asset's box
says when its last event was. ``focus`` keeps only what is connected to one DAG.

>>> from types import SimpleNamespace as A
>>> a = A(id=1, uri="s3://x", name="x", producers=(("etl", "load"),), consumers=("report",),
...       last_event_at=None, events=0)
>>> sorted(lineage_graph([a]).edges)
[('asset:1', 'dag:report'), ('dag:etl', 'asset:1')]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import networkx as nx
from markupsafe import Markup, escape

from .formatting import utc
from .graph_layout import Layout, layout

_DEFS = (
    '<defs><marker id="lineage-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
    'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
    'class="arrow-head"></path></marker></defs>'
)


def lineage_graph(assets: Iterable[Any], focus: str | None = None) -> nx.DiGraph:
    """``dag:<id>`` and ``asset:<id>`` nodes, an edge per production and per schedule;
    with ``focus`` (a dag_id) only the part connected to that DAG."""
    g = nx.DiGraph()
    for a in assets:
        node = f"asset:{a.id}"
        g.add_node(node, kind="asset", record=a)
        for dag_id, _task_id in a.producers:
            g.add_node(f"dag:{dag_id}", kind="dag", dag_id=dag_id)
            g.add_edge(f"dag:{dag_id}", node)
        for dag_id in a.consumers:
            g.add_node(f"dag:{dag_id}", kind="dag", dag_id=dag_id)
            g.add_edge(node, f"dag:{dag_id}")
    if focus is not None:
        start = f"dag:{focus}"
        if start not in g:
            return nx.DiGraph()
        keep = nx.node_connected_component(g.to_undirected(as_view=True), start)
        g = g.subgraph(keep).copy()
    return g


def lineage_svg(graph: nx.DiGraph, asset_href: str, dag_href: str) -> Markup:
    """The graph as SVG: DAG boxes link to ``dag_href + dag_id``, asset boxes (with
    their last event's time) to ``asset_href + id``; every text escaped."""
    lay: Layout = layout(graph)
    parts = [
        f'<svg class="graph lineage" width="{lay.width:.0f}" height="{lay.height:.0f}" '
        f'viewBox="0 0 {lay.width:.0f} {lay.height:.0f}" role="img" '
        f'aria-label="asset lineage">{_DEFS}'
    ]
    for e in lay.edges:
        parts.append(
            f'<path class="edge" d="{e.path}" marker-end="url(#lineage-arrow)" '
            f'data-source="{escape(e.source)}" data-target="{escape(e.target)}"></path>'
        )
    for n in lay.nodes:
        data = graph.nodes[n.id]
        if data["kind"] == "dag":
            dag_id = data["dag_id"]
            href = dag_href + quote(dag_id, safe="")
            label, sub, cls = dag_id, "DAG", "lineage-dag"
        else:
            a = data["record"]
            href = f"{asset_href}{a.id}"
            label = a.name
            sub = (
                f"last {utc(a.last_event_at, seconds=False)}" if a.last_event_at else "no event yet"
            )
            cls = "lineage-asset"
        short = label if len(label) <= 22 else label[:21] + "…"
        parts.append(
            f'<a href="{escape(href)}" class="lineage-node {cls}" data-node="{escape(n.id)}">'
            f"<title>{escape(label)}</title>"
            f'<rect x="{n.x:.0f}" y="{n.y:.0f}" width="{n.w:.0f}" height="{n.h:.0f}" rx="6">'
            f"</rect>"
            f'<text x="{n.x + 8:.0f}" y="{n.y + 15:.0f}">{escape(short)}</text>'
            f'<text class="lineage-sub" x="{n.x + 8:.0f}" y="{n.y + 29:.0f}">{escape(sub)}</text>'
            "</a>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
