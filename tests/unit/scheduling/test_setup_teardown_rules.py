"""Setup and teardown tasks in the trigger rules (issue 25, Airflow's semantics): a
teardown's ``all_done_setup_success`` and the constraint a task's indirect setups put
on every rule but ``always``. Tables from Airflow's trigger_rule_dep, then properties
over every combination of states."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.scheduling.trigger_rules import Decision, TriggerRule, decide
from orchestrator.states import TASK_FINISHED, TaskState

W, R, UF, SK = Decision.WAIT, Decision.RELEASE, Decision.UPSTREAM_FAILED, Decision.SKIP
s, f, uf, c, k = "success", "failed", "upstream_failed", "cancelled", "skipped"
run, q = "running", "queued"
TEARDOWN = "all_done_setup_success"
ALL_STATES = [x.value for x in TaskState]
FINISHED = [x.value for x in TASK_FINISHED]


@pytest.mark.parametrize(
    ("upstream", "setups", "expected"),
    [
        # (the work's state, ...) + the setups' states; the setups are upstream too
        ([s], [s], R),  # everything went well
        ([f], [s], R),  # the work failed: the teardown still runs
        ([uf], [s], R),
        ([k], [s], R),  # the work was skipped: its setup ran, so clean up
        ([c], [s], R),
        ([run], [s], W),  # the work still runs: wait for it
        ([q], [s], W),
        ([uf], [f], UF),  # the setup failed: nothing to tear down
        ([uf], [uf], UF),
        ([k], [k], SK),  # the setup was skipped: skip the teardown (Airflow 2.9+)
        ([k, k], [k, s], R),  # two setups, one ran: run
        ([uf, uf], [f, k], UF),  # none ran, not all skipped
        ([f], [run], W),  # never before the setup itself is done
    ],
)
def test_a_teardown_runs_when_its_setup_ran_whatever_happened_between(upstream, setups, expected):
    assert decide(TEARDOWN, upstream + setups, setups=setups) is expected


@pytest.mark.parametrize("rule", [r.value for r in TriggerRule if r != TriggerRule.ALWAYS])
def test_a_failed_or_skipped_indirect_setup_decides_every_rule_but_always(rule):
    for upstream in ([s], [f], [run], [k, s]):
        assert decide(rule, upstream, indirect_setups=[f]) is UF
        assert decide(rule, upstream, indirect_setups=[uf, s]) is UF
        assert decide(rule, upstream, indirect_setups=[s, k]) is SK
        assert decide(rule, upstream, indirect_setups=[f, k]) is UF  # a failure first


def test_always_ignores_the_setups_as_airflow_does():
    assert decide("always", [run], indirect_setups=[f]) is R
    assert decide("always", [run], setups=[f]) is R


def test_an_unfinished_indirect_setup_holds_a_release_but_not_a_verdict():
    assert decide("all_success", [s], indirect_setups=[run]) is W
    assert decide("all_success", [s], indirect_setups=[s, q]) is W
    assert decide("all_success", [f], indirect_setups=[run]) is UF  # the work decides
    assert decide("all_done", [f], indirect_setups=[run]) is W
    assert decide("all_success", [s], indirect_setups=[s, s]) is R


COMBOS = [list(x) for n in (1, 2) for x in itertools.product(ALL_STATES, repeat=n)]


@pytest.mark.parametrize("rule", [r.value for r in TriggerRule])
def test_successful_indirect_setups_change_nothing(rule):
    for states in COMBOS:
        assert decide(rule, states, indirect_setups=[s, s]) is decide(rule, states)


@pytest.mark.parametrize("rule", [r.value for r in TriggerRule if r != TriggerRule.ALWAYS])
def test_a_task_with_indirect_setups_runs_only_once_all_of_them_succeeded(rule):
    for states in COMBOS:
        for setups in itertools.product(ALL_STATES, repeat=2):
            got = decide(rule, states, indirect_setups=list(setups))
            if got is R:
                assert list(setups) == [s, s], (rule, states, setups)
                assert decide(rule, states) is R, (rule, states, setups)


@given(
    work=st.lists(st.sampled_from(ALL_STATES), min_size=0, max_size=3),
    setups=st.lists(st.sampled_from(ALL_STATES), min_size=1, max_size=3),
)
def test_teardown_properties(work, setups):
    """Over any states: it never runs before everything upstream is done; once all is
    done it runs iff a setup succeeded, skips iff every setup skipped; and the work's
    own outcome never matters once it is done."""
    got = decide(TEARDOWN, work + setups, setups=setups)
    done = all(x in FINISHED for x in work + setups)
    if not done:
        assert got is W
        return
    if s in setups:
        assert got is R
    elif all(x == k for x in setups):
        assert got is SK
    else:
        assert got is UF
    for other in itertools.product(FINISHED, repeat=len(work)):
        assert decide(TEARDOWN, list(other) + setups, setups=setups) is got


def test_the_teardown_rule_without_setups_is_all_done():
    for states in COMBOS:
        assert decide(TEARDOWN, states) is decide("all_done", states)
