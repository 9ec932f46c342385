"""Setup and teardown tasks on the graph: scopes, what a clear takes along, the run's leaves.

Pure code over a DAG's edges and which tasks are setups and teardowns (issue 25, with
Airflow's semantics; the trigger rules themselves are in
:mod:`orchestrator.scheduling.trigger_rules`):

- A setup ``s`` is *relevant* to a task ``t`` (not a teardown) that runs after it when
  ``s`` has no teardown, or one of ``s``'s teardowns runs after ``t``: ``t`` is in
  ``s``'s scope. Every relevant setup must succeed before ``t`` runs (those that are
  not direct upstream tasks of ``t`` are its *indirect* setups).
- Clearing a task clears its relevant setups and their teardowns too; clearing a
  setup clears its teardowns (Airflow's ``DAG.partial_subset`` without upstream).
- A run's state is read from its *effective leaves*: teardowns are ignored (unless
  ``on_failure_fail_dagrun``), so the tasks just before them count as leaves.

>>> g = SetupTeardown({"s": (), "w": ("s",), "t": ("s", "w")}, {"s"}, {"t"})
>>> g.indirect_setups("w"), g.clear_targets("w"), g.run_leaves()
((), ['w', 's', 't'], ('w',))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx


@dataclass(frozen=True, eq=False)
class SetupTeardown:
    """A DAG's edges (``upstream``: task id -> its direct upstream ids) and its setup
    and teardown tasks; ``fail_dagrun``: the teardowns whose failure fails the run."""

    upstream: Mapping[str, Iterable[str]]
    setups: Iterable[str] = ()
    teardowns: Iterable[str] = ()
    fail_dagrun: Iterable[str] = ()
    _indirect: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    @cached_property
    def _setups(self) -> frozenset[str]:
        return frozenset(self.setups)

    @cached_property
    def _teardowns(self) -> frozenset[str]:
        return frozenset(self.teardowns)

    @cached_property
    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(self.upstream)
        for task_id, ups in self.upstream.items():
            g.add_edges_from((u, task_id) for u in ups)
        return g

    def teardowns_of(self, setup_id: str) -> list[str]:
        """The teardowns directly downstream of ``setup_id``."""
        return sorted(d for d in self.graph.successors(setup_id) if d in self._teardowns)

    @cached_property
    def _scopes(self) -> dict[str, frozenset[str]]:
        """Each setup's scope: the tasks it is relevant to (teardowns left out)."""
        out = {}
        for s in self._setups:
            after = nx.descendants(self.graph, s)
            ends = self.teardowns_of(s)
            if ends:
                before_an_end = set().union(*(nx.ancestors(self.graph, t) for t in ends))
                after &= before_an_end
            out[s] = frozenset(after - self._teardowns)
        return out

    def relevant_setups(self, task_id: str) -> tuple[str, ...]:
        """The setups that must succeed before ``task_id`` runs (none for a teardown)."""
        if not self._setups:
            return ()
        return tuple(sorted(s for s, scope in self._scopes.items() if task_id in scope))

    def indirect_setups(self, task_id: str) -> tuple[str, ...]:
        """The relevant setups of ``task_id`` that are not its direct upstream tasks."""
        if not self._setups:
            return ()
        found = self._indirect.get(task_id)
        if found is None:
            direct = set(self.upstream[task_id])
            found = tuple(s for s in self.relevant_setups(task_id) if s not in direct)
            self._indirect[task_id] = found
        return found

    def setups_and_teardowns_of(self, task_id: str) -> set[str]:
        """``task_id``'s relevant setups and their teardowns (``task_id`` left out)."""
        out: set[str] = set()
        for s in self.relevant_setups(task_id):
            out.add(s)
            out.update(self.teardowns_of(s))
        out.discard(task_id)
        return out

    def clear_targets(self, task_id: str, downstream: bool = False) -> list[str]:
        """What clearing ``task_id`` (and its downstream tasks, if asked) clears:
        ``task_id`` first, then the others sorted."""
        out: set[str] = set()
        plain = task_id not in self._setups and task_id not in self._teardowns
        if downstream:
            for rel in nx.descendants(self.graph, task_id):
                out.add(rel)
                if rel not in self._setups and rel not in self._teardowns:
                    out |= self.setups_and_teardowns_of(rel)
        if plain:
            out |= self.setups_and_teardowns_of(task_id)
        if task_id in self._setups and not downstream:
            out.update(self.teardowns_of(task_id))
        out.discard(task_id)
        return [task_id, *sorted(out)]

    def run_leaves(self) -> tuple[str, ...]:
        """The tasks whose states decide the run's: the leaves once every teardown
        (but those with ``on_failure_fail_dagrun``) is ignored; the plain leaves when
        that leaves none (a DAG of teardowns only)."""
        counted = set(self.fail_dagrun)

        def ignorable(t: str) -> bool:
            return t in self._teardowns and t not in counted

        leaves = tuple(
            sorted(
                t
                for t in self.upstream
                if not ignorable(t) and all(ignorable(d) for d in self.graph.successors(t))
            )
        )
        if leaves:
            return leaves
        return tuple(sorted(t for t in self.upstream if not any(self.graph.successors(t))))
