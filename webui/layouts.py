"""Each DAG version's graph layout, computed once and kept.

A version never changes, so neither does its layout. The first web server process
that shows a version lays it out (:func:`webui.graph_layout.layout`) and stores the
result with the version (``dag_versions.layout``, migration 0010); every other
process, and every later request, reads that. On top, each process keeps the last
:data:`KEEP` layouts it used in memory, ready to draw (:class:`Drawing`), so a page
that is polled every 2 s costs no layout work and no JSON parsing.

Why both: an in-memory cache alone would lay the same version out again in every
web server process and after every restart (a 10,000-task DAG takes about a
second); the stored copy alone would parse megabytes of JSON on every request.

>>> layouts = Layouts()                                        # doctest: +SKIP
>>> layouts.get(store, spec, "etl", dag.version_hash).layout   # doctest: +SKIP
Layout(nodes=[...], edges=[...], ...)
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from orchestrator.authoring.spec import DagSpec
from orchestrator.store import Store

from . import graph_layout, task_groups
from .render import Drawing

log = logging.getLogger(__name__)

KEEP = 32  # versions kept in memory per web server process


class Layouts:
    """A per-app cache of drawings by (dag_id, version_hash); thread-safe."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._items: OrderedDict[tuple[str, ...], Drawing] = OrderedDict()
        self._lock = threading.Lock()  # guards _items; held only for dict operations
        self._making = threading.Lock()  # one layout made at a time per process

    def get(
        self,
        store: Store,
        spec: DagSpec,
        dag_id: str,
        version_hash: str,
        expanded: frozenset[str] = frozenset(),
    ) -> Drawing:
        """The drawing of a DAG version; a DAG with task groups is drawn with its groups
        closed (each one node) but those in ``expanded`` (issue 27 item 1)."""
        groups = task_groups.groups_of(spec)
        if groups:
            return self._grouped(spec, dag_id, version_hash, groups, expanded)
        key = (dag_id, version_hash)
        found = self._cached(key)
        if found is not None:
            return found
        with self._making:
            found = self._cached(key)  # another thread made it while this one waited
            if found is not None:
                return found
            lay = None
            stored = store.version_layout(dag_id, version_hash)
            if stored is not None:
                lay = graph_layout.from_json(stored)  # None: an older layout format
            if lay is None:
                lay = graph_layout.layout(spec.graph, task_groups.groups_of(spec))
                store.record_layout(dag_id, version_hash, graph_layout.to_json(lay))
                log.info(
                    "laid out dag_id=%s version=%s: %d tasks", dag_id, version_hash, len(lay.nodes)
                )
            outlets = {t.task_id: t.outlets for t in spec.tasks.values() if t.outlets}
            sensors = frozenset(t for t, spec_t in spec.tasks.items() if spec_t.sensor)
            # issue 15: outlets and sensors drawn distinctly; issue 14: groups as boxes
            drawing = Drawing(lay, outlets, task_groups.groups_of(spec), sensors)
            with self._lock:
                self._items[key] = drawing
                while len(self._items) > self.keep:
                    self._items.popitem(last=False)
            return drawing

    def _grouped(
        self,
        spec: DagSpec,
        dag_id: str,
        version_hash: str,
        groups: dict[str, str],
        expanded: frozenset[str],
    ) -> Drawing:
        """A grouped DAG's drawing for one set of open groups, laid out once per set
        (in memory: a closed group shrinks the graph, so these are quick to make)."""
        key = (dag_id, version_hash, ",".join(sorted(expanded)))
        found = self._cached(key)
        if found is not None:
            return found
        with self._making:
            found = self._cached(key)
            if found is not None:
                return found
            graph, boxes_of, closed = task_groups.contract(spec.graph, groups, expanded)
            lay = graph_layout.layout(graph, boxes_of)
            outlets = {t.task_id: t.outlets for t in spec.tasks.values() if t.outlets}
            sensors = frozenset(t for t, spec_t in spec.tasks.items() if spec_t.sensor)
            drawing = Drawing(lay, outlets, boxes_of, sensors, closed, expanded)
            with self._lock:
                self._items[key] = drawing
                while len(self._items) > self.keep:
                    self._items.popitem(last=False)
            return drawing

    def _cached(self, key: tuple[str, ...]) -> Drawing | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found
