"""Setup and teardown tasks on the graph (issue 25): which setups a task needs, what a
clear takes along and which tasks decide a run's state, on the shapes of Airflow's
setup-and-teardown guide, then against a literal reading of Airflow's definitions
(``get_upstreams_only_setups_and_teardowns``, ``partial_subset``,
``_tis_for_dagrun_state``) over random DAGs."""

from __future__ import annotations

import doctest

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.scheduling import setup_teardown
from orchestrator.scheduling.setup_teardown import SetupTeardown


def graph(edges: str, setups=(), teardowns=(), fail=()) -> SetupTeardown:
    """``"a>b b>c"``: a runs before b, b before c."""
    up: dict[str, list[str]] = {}
    for edge in edges.split():
        a, b = edge.split(">")
        up.setdefault(a, [])
        up.setdefault(b, []).append(a)
    return SetupTeardown({t: tuple(u) for t, u in up.items()}, setups, teardowns, fail)


def test_the_guide_example_create_query_delete():
    g = graph("create>query query>delete create>delete", {"create"}, {"delete"})
    assert g.relevant_setups("query") == ("create",)
    assert g.indirect_setups("query") == ()  # a direct upstream task: its rule decides
    assert g.relevant_setups("delete") == ()  # a teardown has no setup constraint
    assert g.clear_targets("query") == ["query", "create", "delete"]
    assert g.clear_targets("create") == ["create", "delete"]
    assert g.clear_targets("delete") == ["delete"]
    assert g.run_leaves() == ("query",)  # the run's state is the query's


def test_a_task_further_inside_the_scope_has_the_setup_as_indirect_setup():
    g = graph("s>w1 w1>w2 w2>t s>t", {"s"}, {"t"})
    assert g.indirect_setups("w2") == ("s",)
    assert g.clear_targets("w2") == ["w2", "s", "t"]
    assert g.clear_targets("w1", downstream=True) == ["w1", "s", "t", "w2"]


def test_a_task_after_the_teardown_is_out_of_scope():
    g = graph("s>w1 w1>t s>t t>w2", {"s"}, {"t"})
    assert g.relevant_setups("w2") == ()
    assert g.clear_targets("w2") == ["w2"]
    assert g.run_leaves() == ("w1", "w2")  # w1 is only followed by a teardown


def test_a_setup_without_teardown_is_relevant_to_everything_after_it():
    g = graph("s>a a>b", {"s"})
    assert g.indirect_setups("b") == ("s",)
    assert g.clear_targets("b") == ["b", "s"]


def test_nested_setups():
    g = graph(
        "s1>s2 s2>w w>t2 t2>t1 s1>t1 s2>t2",
        setups={"s1", "s2"},
        teardowns={"t1", "t2"},
    )
    assert g.relevant_setups("w") == ("s1", "s2")
    assert g.indirect_setups("w") == ("s1",)
    assert g.relevant_setups("s2") == ("s1",)
    assert g.clear_targets("w") == ["w", "s1", "s2", "t1", "t2"]
    assert g.clear_targets("s2") == ["s2", "t2"]
    assert g.run_leaves() == ("w",)


def test_on_failure_fail_dagrun_makes_the_teardown_count():
    g = graph("s>w w>t s>t", {"s"}, {"t"}, fail={"t"})
    assert g.run_leaves() == ("t",)


def test_a_dag_of_teardowns_only_counts_its_plain_leaves():
    g = graph("a>b", teardowns={"a", "b"})
    assert g.run_leaves() == ("b",)


def test_no_setups_no_change():
    g = graph("a>b b>c a>c")
    assert g.indirect_setups("c") == ()
    assert g.clear_targets("a") == ["a"]
    assert g.clear_targets("a", downstream=True) == ["a", "b", "c"]
    assert g.run_leaves() == ("c",)


def test_doctests():
    assert doctest.testmod(setup_teardown).failed == 0


# -------------------------------------------------- against Airflow's definitions, read literally


def _airflow(edges: list[tuple[str, str]], nodes: list[str], setups: set, teardowns: set):
    d = nx.DiGraph()
    d.add_nodes_from(nodes)
    d.add_edges_from(edges)

    def only_setups_and_teardowns(t):
        down_teardowns = {x for x in nx.descendants(d, t) if x in teardowns}
        for task in nx.ancestors(d, t):
            if task not in setups:
                continue
            no_teardowns = not any(x in teardowns for x in d.successors(task))
            if no_teardowns or set(d.successors(task)) & down_teardowns:
                yield task
                yield from (x for x in d.successors(task) if x in teardowns and x != t)

    def clear(t, downstream):
        also = set()
        if downstream:
            for rel in nx.descendants(d, t):
                also.add(rel)
                if rel not in setups and rel not in teardowns:
                    also |= set(only_setups_and_teardowns(rel))
        if t not in setups and t not in teardowns:
            also |= set(only_setups_and_teardowns(t))
        if t in setups and not downstream:
            also |= {x for x in d.successors(t) if x in teardowns}
        return {t} | also

    def relevant(t):
        return set() if t in teardowns else {x for x in only_setups_and_teardowns(t) if x in setups}

    return d, clear, relevant


@st.composite
def dags(draw):
    n = draw(st.integers(2, 8))
    nodes = [f"t{i}" for i in range(n)]
    edges = [(nodes[i], nodes[j]) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    roles = draw(st.lists(st.sampled_from(["", "setup", "teardown"]), min_size=n, max_size=n))
    setups = {x for x, r in zip(nodes, roles, strict=True) if r == "setup"}
    teardowns = {x for x, r in zip(nodes, roles, strict=True) if r == "teardown"}
    fail = {x for x in teardowns if draw(st.booleans())}
    return nodes, edges, setups, teardowns, fail


@settings(max_examples=300, deadline=None)
@given(dags())
def test_scopes_and_clears_match_airflow(dag):
    nodes, edges, setups, teardowns, fail = dag
    up = {x: tuple(a for a, b in edges if b == x) for x in nodes}
    g = SetupTeardown(up, setups, teardowns, fail)
    d, clear, relevant = _airflow(edges, nodes, setups, teardowns)
    for t in nodes:
        assert set(g.relevant_setups(t)) == relevant(t), t
        assert set(g.indirect_setups(t)) == relevant(t) - set(up[t]), t
        for downstream in (False, True):
            got = g.clear_targets(t, downstream)
            assert got[0] == t and len(got) == len(set(got))
            assert set(got) == clear(t, downstream), (t, downstream)


@settings(max_examples=300, deadline=None)
@given(dags())
def test_run_leaves_match_airflow(dag):
    nodes, edges, setups, teardowns, fail = dag
    up = {x: tuple(a for a, b in edges if b == x) for x in nodes}
    d = nx.DiGraph()
    d.add_nodes_from(nodes)
    d.add_edges_from(edges)

    def effective_leaf(t):
        for down in d.successors(t):
            if down not in teardowns or down in fail:
                return False
        return t not in teardowns or t in fail

    expected = {t for t in nodes if effective_leaf(t)} or {
        t for t in nodes if not any(d.successors(t))
    }
    assert set(SetupTeardown(up, setups, teardowns, fail).run_leaves()) == expected
