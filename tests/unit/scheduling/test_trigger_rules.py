"""Trigger rules (orchestrator.scheduling.trigger_rules.decide): a table of every rule against
waiting, partly finished and all-finished upstream tasks, then invariants checked over
every combination of up to three upstream states."""

from __future__ import annotations

import doctest
import itertools
import pathlib

import pytest

from orchestrator.scheduling import trigger_rules
from orchestrator.scheduling.trigger_rules import Decision, TriggerRule, decide
from orchestrator.states import TASK_FINISHED, TaskState

W, R, UF, SK = Decision.WAIT, Decision.RELEASE, Decision.UPSTREAM_FAILED, Decision.SKIP
# shorthand for upstream states
s, f, uf, c, k = "success", "failed", "upstream_failed", "cancelled", "skipped"
sch, q, run, retry = "scheduled", "queued", "running", "up_for_retry"

FAILED_LIKE = {TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED}

TABLE = [
    # all_success
    ("all_success", [s, s, s], R),
    ("all_success", [s, run], W),
    ("all_success", [sch, q], W),
    ("all_success", [s, f], UF),
    ("all_success", [run, uf], UF),  # decided early: it can never succeed
    ("all_success", [s, c], UF),
    ("all_success", [s, k], SK),
    ("all_success", [k, retry], SK),
    # all_failed
    ("all_failed", [f, uf, c], R),
    ("all_failed", [f, run], W),
    ("all_failed", [f, s], SK),
    ("all_failed", [f, k], SK),
    ("all_failed", [q, s], SK),
    # all_done
    ("all_done", [s, f, k, uf, c], R),
    ("all_done", [s, retry], W),
    ("all_done", [q], W),
    # one_success
    ("one_success", [s, run], R),
    ("one_success", [f, run], W),
    ("one_success", [f, k], UF),
    ("one_success", [f, f], UF),
    ("one_success", [k, k], SK),
    # one_failed
    ("one_failed", [f, run], R),
    ("one_failed", [c, s], R),
    ("one_failed", [s, run], W),
    ("one_failed", [s, k], SK),
    # one_done
    ("one_done", [s, run], R),
    ("one_done", [f, sch], R),
    ("one_done", [k, run], W),
    ("one_done", [k, k], SK),
    # upstream_failed, skipped and cancelled are not an outcome of the upstream task's
    # own: wait while something still runs, skip once everything finished (Airflow)
    ("one_done", [uf, run], W),
    ("one_done", [uf, sch], W),
    ("one_done", [c, retry], W),
    ("one_done", [uf, uf], SK),
    ("one_done", [uf, k, c], SK),
    ("one_done", [uf, f], R),
    # none_failed
    ("none_failed", [s, k], R),
    ("none_failed", [k, k], R),
    ("none_failed", [s, run], W),
    ("none_failed", [f, run], UF),
    ("none_failed", [s, c], UF),
    # none_skipped
    ("none_skipped", [s, f, uf], R),
    ("none_skipped", [s, run], W),
    ("none_skipped", [k, run], SK),
    # none_failed_min_one_success
    ("none_failed_min_one_success", [s, k], R),
    ("none_failed_min_one_success", [k, k], SK),
    ("none_failed_min_one_success", [s, run], W),
    ("none_failed_min_one_success", [s, f], UF),
    ("none_failed_min_one_success", [uf, q], UF),
    # all_done_min_one_success (issue 14)
    ("all_done_min_one_success", [s, f, k], R),
    ("all_done_min_one_success", [s, run], W),
    ("all_done_min_one_success", [f, run], W),
    ("all_done_min_one_success", [f, k], UF),
    ("all_done_min_one_success", [k, k], SK),
    ("all_done_min_one_success", [s, uf], R),
    # all_skipped (issue 14)
    ("all_skipped", [k, k], R),
    ("all_skipped", [k, run], W),
    ("all_skipped", [k, s], SK),
    ("all_skipped", [f, run], SK),  # decided early: one finished without a skip
    ("all_skipped", [c, k], SK),
    # all_done_setup_success (issue 25) with no setup among the upstream tasks: all_done
    ("all_done_setup_success", [s, f, k, uf, c], R),
    ("all_done_setup_success", [s, run], W),
    # always
    ("always", [run, q], R),
    ("always", [f, uf], R),
    ("always", [k], R),
]


@pytest.mark.parametrize(("rule", "states", "expected"), TABLE)
def test_rule_table(rule, states, expected):
    assert decide(rule, states) is expected


def test_table_covers_every_rule():
    assert {rule for rule, _, _ in TABLE} == {r.value for r in TriggerRule}


@pytest.mark.parametrize("rule", [r.value for r in TriggerRule])
def test_no_upstream_means_release(rule):
    assert decide(rule, []) is R


def test_unknown_rule_and_state_raise():
    with pytest.raises(ValueError):
        decide("sometimes", [s])
    with pytest.raises(ValueError):
        decide("all_success", ["exploded"])


def test_doctests():
    assert doctest.testmod(trigger_rules).failed == 0


# ------------------------------------------------------- the truth table in the docs

CONCEPTS = pathlib.Path(__file__).parents[3] / "docs" / "concepts.md"
DOC_STATE = {"s": s, "f": f, "uf": uf, "k": k, "c": c}
UNFINISHED = [x.value for x in TaskState if x not in TASK_FINISHED]
DOC_DECISION = {"run": R, "wait": W, "skip": SK, "UF": UF}


def _doc_truth_table() -> tuple[list[str], dict[str, list[str]]]:
    text = CONCEPTS.read_text(encoding="utf-8")
    start = text.index("<!-- trigger-rule-truth-table -->")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    header, _, *body = rows
    assert header[0] == "rule"
    return header[1:], {row[0].strip("`"): row[1:] for row in body}


def _upstreams(column: str) -> list[list[str]]:
    """Every list of upstream states a column header stands for (``…`` = each unfinished
    state in turn)."""
    names = column.split()
    choices = [UNFINISHED if n == "…" else [DOC_STATE[n]] for n in names]
    return [list(combo) for combo in itertools.product(*choices)]


def test_docs_truth_table_covers_every_rule_and_state():
    columns, table = _doc_truth_table()
    assert set(table) == {r.value for r in TriggerRule}
    seen = {x for col in columns for combo in _upstreams(col) for x in combo}
    assert seen == {x.value for x in TaskState}
    assert all(len(cells) == len(columns) for cells in table.values())


@pytest.mark.parametrize("rule", [r.value for r in TriggerRule])
def test_docs_truth_table_matches_decide(rule):
    columns, table = _doc_truth_table()
    for column, cell in zip(columns, table[rule], strict=True):
        assert cell in DOC_DECISION, (rule, column, cell)
        for states in _upstreams(column):
            assert decide(rule, states) is DOC_DECISION[cell], (rule, states, cell)


# --------------------------------------------------------------------------- properties

ALL_STATES = [st.value for st in TaskState]
COMBOS = [list(combo) for n in (1, 2, 3) for combo in itertools.product(ALL_STATES, repeat=n)]


def _finished(states):
    return all(TaskState(x) in TASK_FINISHED for x in states)


@pytest.mark.parametrize("rule", [r.value for r in TriggerRule])
def test_invariants_over_all_combinations(rule):
    n = len(TaskState)  # 10 with up_for_reschedule (issue 15)
    assert len(COMBOS) == n + n**2 + n**3 and n >= 10
    for states in COMBOS:
        got = decide(rule, states)
        assert isinstance(got, Decision)
        n_success = states.count(s)
        n_failed = sum(TaskState(x) in FAILED_LIKE for x in states)
        n_skipped = states.count(k)
        finished = _finished(states)
        where = f"{rule} {states} -> {got}"

        # a rule never keeps waiting once every upstream task is finished
        if finished:
            assert got is not W, where
        # the order of upstream tasks never matters
        for perm in itertools.permutations(states):
            assert decide(rule, list(perm)) is got, where

        if got is R:
            if rule == "all_success":
                assert n_success == len(states), where
            if rule == "all_failed":
                assert n_failed == len(states), where
            if rule in (
                "all_done",
                "none_failed",
                "none_skipped",
                "none_failed_min_one_success",
                "all_done_setup_success",
            ):
                assert finished, where
            if rule in ("none_failed", "none_failed_min_one_success"):
                assert n_failed == 0, where
            if rule == "none_skipped":
                assert n_skipped == 0, where
            if rule in ("one_success", "none_failed_min_one_success"):
                assert n_success >= 1, where
            if rule == "one_failed":
                assert n_failed >= 1, where
            if rule == "one_done":
                assert n_success + states.count(f) >= 1, where
            if rule == "all_done_min_one_success":
                assert finished and n_success >= 1, where
            if rule == "all_skipped":
                assert n_skipped == len(states), where
        if rule == "all_skipped" and any(_finished([x]) and x != k for x in states):
            assert got is SK, where
        if rule == "all_success" and n_success == len(states):
            assert got is R, where
        if rule == "always":
            assert got is R, where
        # upstream_failed is only ever the answer when something upstream failed
        if got is UF:
            assert n_failed >= 1, where


@pytest.mark.parametrize("rule", [r.value for r in TriggerRule])
def test_an_early_decision_is_never_contradicted_about_running(rule):
    """If a rule decides before every upstream task finished, then however the rest
    finish, the answer "run" or "don't run" stays the same."""
    terminal = [x.value for x in TASK_FINISHED]
    for states in COMBOS:
        early = decide(rule, states)
        if early is W:
            continue
        waiting = [i for i, x in enumerate(states) if TaskState(x) not in TASK_FINISHED]
        for outcome in itertools.product(terminal, repeat=len(waiting)):
            done = list(states)
            for i, x in zip(waiting, outcome, strict=True):
                done[i] = x
            late = decide(rule, done)
            assert (late is R) == (early is R), f"{rule} {states}->{early}, {done}->{late}"
