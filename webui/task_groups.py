"""Task groups in the graph and the grid (issue 14): pure geometry and markup pieces.

The graph draws every task where the layout put it, and each group as a box around
its tasks (drawn under the nodes, over the edges). A group starts *collapsed*: its box
is opaque, its tasks are hidden, and the box is coloured by the group's state (its
tasks' states summed up by :func:`group_state`); a click opens it (static/app.js):
the box becomes an outline and its tasks (and the boxes of nested groups, collapsed)
appear. The grid puts a group's rows together under a header row whose cells show the
group's state per run; a click on the header folds and unfolds them.

>>> group_state(["success", "running", "scheduled"])
'running'
>>> [e[:2] for e in grid_plan(["a", "g.x", "b", "g.y"], {"g.x": "g", "g.y": "g"})]
[('task', 'a'), ('group', 'g'), ('task', 'g.x'), ('task', 'g.y'), ('task', 'b')]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import escape

# the first of these a group's tasks are in is the group's state
PRECEDENCE = (
    "failed", "running", "up_for_retry", "queued", "upstream_failed", "scheduled",
    "cancelled", "success", "skipped",
)  # fmt: skip
LABEL_H = 18  # room above a box's tasks for its label
STEP = 8  # padding a box adds around the boxes nested in it


def groups_of(spec: Any) -> dict[str, str]:
    """task_id -> its group path, for the tasks of ``spec`` (a DagSpec) in a group."""
    return {t.task_id: t.group for t in spec.tasks.values() if getattr(t, "group", None)}


def ancestors(path: str) -> list[str]:
    """``"a.b.c"`` -> ``["a", "a.b", "a.b.c"]``."""
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def group_state(states: Iterable[str]) -> str:
    seen = set(states)
    return next((s for s in PRECEDENCE if s in seen), "none")


def members(groups: Mapping[str, str]) -> dict[str, list[str]]:
    """group path -> every task in it or in a group nested in it (task order kept)."""
    out: dict[str, list[str]] = {}
    for task_id, path in groups.items():
        for p in ancestors(path):
            out.setdefault(p, []).append(task_id)
    return out


@dataclass(frozen=True)
class Box:
    path: str
    depth: int  # 0 for a top-level group
    x: float
    y: float
    w: float
    h: float
    tasks: tuple[str, ...]


def boxes(nodes: Iterable[Any], groups: Mapping[str, str]) -> list[Box]:
    """A box per group around its tasks' nodes (``nodes``: the layout's), outer
    boxes first, each padded to hold the boxes nested in it."""
    if not groups:
        return []
    where = {n.id: n for n in nodes}
    paths = members(groups)
    nested = {p: max((q.count(".") - p.count(".") for q in paths if q.startswith(p + ".")),
                     default=0) for p in paths}  # fmt: skip
    out = []
    for path, tasks in paths.items():
        placed = [where[t] for t in tasks if t in where]
        if not placed:
            continue
        pad = STEP * (1 + nested[path])
        x0 = min(n.x for n in placed) - pad
        y0 = min(n.y for n in placed) - pad - LABEL_H * (1 + nested[path])
        x1 = max(n.x + n.w for n in placed) + pad
        y1 = max(n.y + n.h for n in placed) + pad
        out.append(Box(path, path.count("."), x0, y0, x1 - x0, y1 - y0, tuple(tasks)))
    out.sort(key=lambda b: (b.depth, b.path))
    return out


def bounds(items: list[Box], width: float, height: float) -> tuple[float, float, float, float]:
    """The drawing's viewBox (x, y, w, h): the layout's, grown to hold every box."""
    x0 = min([0.0, *(b.x - 2 for b in items)])
    y0 = min([0.0, *(b.y - 2 for b in items)])
    x1 = max([width, *(b.x + b.w + 2 for b in items)])
    y1 = max([height, *(b.y + b.h + 2 for b in items)])
    return x0, y0, x1 - x0, y1 - y0


def svg_boxes(
    items: list[Box],
    states: Mapping[str, str],
    expanded: frozenset[str] = frozenset(),
    sizes: Mapping[str, int] | None = None,
) -> str:
    """The boxes' SVG: each an open group's outline around its nodes, its label a
    button that closes it (``data-expand``: the ``expand`` value after the click).
    ``sizes``: how many tasks a node stands for (a closed group's node: its tasks)."""
    parts = []
    sizes = sizes or {}
    for b in items:
        state = group_state(states.get(t, "none") for t in b.tasks)
        path = str(escape(b.path))
        label = str(escape(b.path.rsplit(".", 1)[-1]))
        n = sum(sizes.get(t, 1) for t in b.tasks)
        after = str(escape(toggled(expanded, b.path)))
        parts.append(
            f'<g class="group-box expanded state-{escape(state)}" data-group="{path}" '
            f'data-state="{escape(state)}" data-expand="{after}">'
            f'<rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="9"></rect>'
            f'<g class="group-label" tabindex="0" role="button" aria-expanded="true" '
            f'aria-label="close task group {path}">'
            f"<title>{path}: {escape(state)} ({n} task{'s' if n != 1 else ''}); click to close"
            f"</title>"
            f'<text x="{b.x + 10:.1f}" y="{b.y + 14:.1f}"><tspan class="group-toggle">▾</tspan> '
            f'{label} <tspan class="muted">({n})</tspan></text></g></g>'
        )
    return "".join(parts)


def grid_plan(tasks: Iterable[str], groups: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """The grid's rows in order: ``("group", path, depth)`` headers and ``("task",
    task_id, depth)``; a group's rows follow its header, together, where its first
    task would have been."""
    tree: dict[str, list[tuple[str, str]]] = {"": []}  # parent path -> children in order
    for task_id in tasks:
        parent = ""
        for p in ancestors(groups[task_id]) if task_id in groups else []:
            if p not in tree:
                tree[p] = []
                tree[parent].append(("group", p))
            parent = p
        tree[parent].append(("task", task_id))
    out: list[tuple[str, str, int]] = []

    def walk(parent: str, depth: int) -> None:
        for kind, name in tree[parent]:
            out.append((kind, name, depth))
            if kind == "group":
                walk(name, depth + 1)

    walk("", 0)
    return out


# -- collapsed groups as nodes of their own (issue 27 item 1) ------------------------------
def all_paths(groups: Mapping[str, str]) -> set[str]:
    """Every group path (nested ones included) of ``groups`` (task_id -> path)."""
    return {p for path in groups.values() for p in ancestors(path)}


def expanded_of(raw: str, groups: Mapping[str, str]) -> frozenset[str]:
    """The ``expand`` query parameter (comma-separated group paths) as the set of open
    groups; a path whose parent is closed is closed too. ValueError naming an unknown
    path."""
    known = all_paths(groups)
    asked = [p for p in (x.strip() for x in raw.split(",")) if p]
    unknown = [p for p in asked if p not in known]
    if unknown:
        raise ValueError(
            f"{unknown[0][:80]!r} is not a task group of this DAG "
            f"(its groups: {', '.join(sorted(known)[:20]) or 'none'})"
        )
    chosen = set(asked)
    return frozenset(p for p in chosen if all(a in chosen for a in ancestors(p)))


def contract(
    graph: Any, groups: Mapping[str, str], expanded: frozenset[str]
) -> tuple[Any, dict[str, str], dict[str, tuple[str, ...]]]:
    """``graph`` with each closed group drawn as one node: (the graph, node -> the open
    group whose box holds it, closed group node -> its tasks). A closed group's node id
    is its path (a task id never equals a group path)."""
    import networkx as nx

    def shown(task_id: str) -> str:
        for p in ancestors(groups[task_id]) if task_id in groups else []:
            if p not in expanded:
                return p
        return task_id

    rep = {t: shown(t) for t in graph.nodes}
    out = nx.DiGraph()
    out.add_nodes_from(dict.fromkeys(rep[t] for t in graph.nodes))
    out.add_edges_from((rep[u], rep[v]) for u, v in graph.edges if rep[u] != rep[v])
    members: dict[str, list[str]] = {}
    for t, node in rep.items():
        if node != t:
            members.setdefault(node, []).append(t)
    boxes_of: dict[str, str] = {}
    for node in out.nodes:
        if node in members:  # a closed group: in its parent's box, if it has one
            parent = node.rsplit(".", 1)[0] if "." in node else None
            if parent is not None:
                boxes_of[node] = parent
        elif node in groups:
            boxes_of[node] = groups[node]
    return out, boxes_of, {g: tuple(ts) for g, ts in members.items()}


def toggled(expanded: frozenset[str], path: str) -> str:
    """The ``expand`` value after a click on ``path``: opened, or closed with the
    groups inside it."""
    if path in expanded:
        keep = {p for p in expanded if p != path and not p.startswith(path + ".")}
    else:
        keep = set(expanded) | {path}
    return ",".join(sorted(keep))
