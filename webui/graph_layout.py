"""A layered left-to-right layout of a DAG for the server-side SVG graph.

Pure: networkx in, coordinates out; no Flask, no database. Layers are longest-path
depths (every edge points right); within a layer nodes are ordered by the barycenter
heuristic, swept left-to-right and right-to-left a few times and kept only when it
lowers the number of edge crossings (ties stay in name order, so the drawing is
stable). Edges that span several layers are routed through invisible dummy points,
so they bend around nodes instead of crossing them.

Every step is near-linear in the size of the graph (crossings are counted as
inversions with a Fenwick tree, O(E log V) per sweep), so a 10,000-task DAG is laid
out in well under a second; the UI still lays out each DAG version only once and
keeps the result (:func:`to_json` / :func:`from_json`, see ``webui/layouts.py``).

>>> import networkx as nx
>>> g = nx.DiGraph([("extract", "load"), ("extract", "check"), ("load", "report")])
>>> lay = layout(g)
>>> [n.id for n in lay.nodes if n.layer == 1]
['check', 'load']
>>> lay.width > 0 and lay.height > 0
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import networkx as nx

NODE_W = 168
NODE_H = 36
GAP_X = 64
GAP_Y = 18
GROUP_GAP = 30  # more room between the nodes of a DAG with task groups, for their boxes
PAD = 12
SWEEPS = 8
BIG = 5_000  # nodes (with dummy points) above which fewer sweeps are made
BIG_SWEEPS = 2


@dataclass(frozen=True)
class Node:
    id: str
    layer: int
    x: float
    y: float
    w: float = NODE_W
    h: float = NODE_H

    @property
    def label(self) -> str:
        """The id, shortened with an ellipsis to fit the box."""
        limit = int(self.w / 7.2)
        return self.id if len(self.id) <= limit else self.id[: limit - 1] + "…"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    path: str  # an SVG path ("M x y C ...")


@dataclass(frozen=True)
class Layout:
    nodes: list[Node]
    edges: list[Edge]
    width: float
    height: float
    crossings: int


def layers_of(graph: nx.DiGraph) -> dict[str, int]:
    """Each node's longest-path depth from a source (sources are layer 0)."""
    depth: dict[str, int] = {}
    for node in nx.lexicographical_topological_sort(graph):
        preds = list(graph.predecessors(node))
        depth[node] = 1 + max(depth[p] for p in preds) if preds else 0
    return depth


def _proper(graph: nx.DiGraph, depth: dict[str, int]) -> tuple[nx.DiGraph, dict]:
    """The graph with long edges split by dummy nodes so each edge spans one layer."""
    g = nx.DiGraph()
    level = dict(depth)
    g.add_nodes_from(graph.nodes)
    for u, v in sorted(graph.edges):
        prev = u
        for k in range(depth[u] + 1, depth[v]):
            dummy = ("dummy", u, v, k)
            level[dummy] = k
            g.add_edge(prev, dummy)
            prev = dummy
        g.add_edge(prev, v)
    return g, level


def count_crossings(g: nx.DiGraph, order: list[list]) -> int:
    """Edge crossings between adjacent layers for the given within-layer orders.

    Two edges (a, b) and (c, d) between the same pair of layers cross when
    ``(a - c) * (b - d) < 0``; sorted by (a, b), that is an inversion of the b's,
    counted with a Fenwick tree in O(E log V) instead of comparing every pair.
    """
    total = 0
    succ = g.succ
    for left, right in zip(order, order[1:], strict=False):
        pos_r = {n: i for i, n in enumerate(right)}
        size = len(right)
        tree = [0] * (size + 1)
        seen = 0
        for u in left:  # by a (left position), then b: ties in a never count as crossings
            targets = sorted(pos_r[v] for v in succ[u] if v in pos_r)
            for b in targets:  # earlier edges (smaller a) ending below b cross this one
                i, at_most = b + 1, 0
                while i > 0:
                    at_most += tree[i]
                    i -= i & -i
                total += seen - at_most
            for b in targets:
                i = b + 1
                while i <= size:
                    tree[i] += 1
                    i += i & -i
                seen += 1
    return total


def _sort_key(node: object) -> str:
    return node if isinstance(node, str) else f"{node[1]}\x00{node[2]}"  # type: ignore[index]


def _sweep(g: nx.DiGraph, order: list[list], down: bool) -> list[list]:
    new = [list(layer) for layer in order]
    rng = range(1, len(new)) if down else range(len(new) - 2, -1, -1)
    for i in rng:
        ref = {n: j for j, n in enumerate(new[i - 1] if down else new[i + 1])}
        current = {n: j for j, n in enumerate(new[i])}

        def bary(n: object, ref: dict = ref, current: dict = current) -> float:
            nbrs = g.predecessors(n) if down else g.successors(n)
            pos = [ref[x] for x in nbrs if x in ref]
            return sum(pos) / len(pos) if pos else current[n]

        new[i].sort(key=lambda n, b=bary: (b(n), current[n]))
    return new


def order_layers(g: nx.DiGraph, level: dict) -> list[list]:
    """Within-layer orders with few crossings (barycenter sweeps, best kept)."""
    n_layers = max(level.values(), default=-1) + 1
    order: list[list] = [[] for _ in range(n_layers)]
    for node in sorted(g.nodes, key=_sort_key):
        order[level[node]].append(node)
    best, best_c = order, count_crossings(g, order)
    for i in range(SWEEPS if g.number_of_nodes() <= BIG else BIG_SWEEPS):
        order = _sweep(g, order, down=i % 2 == 0)
        c = count_crossings(g, order)
        if c < best_c:
            best, best_c = order, c
        if best_c == 0:
            break
    return best


def cluster_groups(order: list[list], groups: dict[str, str]) -> list[list]:
    """Each layer's order with the members of a task group next to each other (issue
    14: the graph draws a box around them), each group where its members are on
    average, nested groups inside their parent's run; other nodes keep their place."""
    if not groups:
        return order
    out = []
    for layer in order:
        pos = {n: i for i, n in enumerate(layer)}
        chain: dict = {}  # node -> its group path, outermost first, or itself
        for n in layer:
            path = groups.get(n) if isinstance(n, str) else None
            chain[n] = path.split(".") if path else []
        sums: dict[tuple, list[float]] = {}  # group -> [sum of positions, members]
        for n in layer:
            for k in range(1, len(chain[n]) + 1):
                acc = sums.setdefault(tuple(chain[n][:k]), [0.0, 0])
                acc[0] += pos[n]
                acc[1] += 1
        means = {key: total / count for key, (total, count) in sums.items()}

        keys: dict = {}
        for n in layer:
            blocks = [means[tuple(chain[n][:k])] for k in range(1, len(chain[n]) + 1)]
            # not in a group: its own place, before a group tied with it
            keys[n] = (*blocks, pos[n]) if blocks else (pos[n], -1.0)
        out.append(sorted(layer, key=keys.__getitem__))
    return out


def layout(graph: nx.DiGraph, groups: dict[str, str] | None = None) -> Layout:
    """Coordinates for every node and an SVG path for every edge of ``graph``;
    ``groups`` (task_id -> task group path) keeps each group's members together."""
    if not graph.nodes:
        return Layout([], [], 0, 0, 0)
    depth = layers_of(graph)
    g, level = _proper(graph, depth)
    order = cluster_groups(order_layers(g, level), groups or {})
    tallest = max(len(layer) for layer in order)
    gap_y = GAP_Y + GROUP_GAP if groups else GAP_Y  # room for the boxes of task groups
    height = PAD * 2 + tallest * NODE_H + (tallest - 1) * gap_y
    pos: dict = {}
    for i, layer in enumerate(order):
        span = len(layer) * NODE_H + (len(layer) - 1) * gap_y
        top = (height - span) / 2
        for j, node in enumerate(layer):
            pos[node] = (PAD + i * (NODE_W + GAP_X), top + j * (NODE_H + gap_y))
    nodes = [
        Node(n, depth[n], *pos[n]) for n in sorted(graph.nodes, key=lambda n: (depth[n], pos[n][1]))
    ]
    edges = [Edge(u, v, _path(g, u, v, depth, pos)) for u, v in sorted(graph.edges)]
    width = PAD * 2 + len(order) * NODE_W + (len(order) - 1) * GAP_X
    return Layout(nodes, edges, width, height, count_crossings(g, order))


def _path(g: nx.DiGraph, u: str, v: str, depth: dict, pos: dict) -> str:
    """A smooth path from u's right side to v's left side through its dummy points."""
    points = [(pos[u][0] + NODE_W, pos[u][1] + NODE_H / 2)]
    for k in range(depth[u] + 1, depth[v]):
        x, y = pos[("dummy", u, v, k)]
        points += [(x, y + NODE_H / 2), (x + NODE_W, y + NODE_H / 2)]
    points.append((pos[v][0], pos[v][1] + NODE_H / 2))
    d = f"M {points[0][0]:.1f} {points[0][1]:.1f}"
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if y0 == y1:
            d += f" L {x1:.1f} {y1:.1f}"
        else:
            mid = (x0 + x1) / 2
            d += f" C {mid:.1f} {y0:.1f} {mid:.1f} {y1:.1f} {x1:.1f} {y1:.1f}"
    return d


LAYOUT_FORMAT = 1  # bump when the geometry changes: stored layouts of the old format are redone


def to_json(lay: Layout) -> str:
    """The layout as compact JSON, to be stored once per DAG version."""
    return json.dumps(
        {
            "format": LAYOUT_FORMAT,
            "width": lay.width,
            "height": lay.height,
            "crossings": lay.crossings,
            "nodes": [[n.id, n.layer, n.x, n.y] for n in lay.nodes],
            "edges": [[e.source, e.target, e.path] for e in lay.edges],
        },
        separators=(",", ":"),
    )


def from_json(text: str) -> Layout | None:
    """The layout stored by :func:`to_json`, or None if it is of another format."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != LAYOUT_FORMAT:
        return None
    return Layout(
        nodes=[Node(i, layer, x, y) for i, layer, x, y in data["nodes"]],
        edges=[Edge(u, v, path) for u, v, path in data["edges"]],
        width=data["width"],
        height=data["height"],
        crossings=data["crossings"],
    )
