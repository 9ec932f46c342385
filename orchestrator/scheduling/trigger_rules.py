"""Trigger rules: when a task may run, given its upstream tasks' states.

Pure code. :func:`decide` looks at the states of a task's direct upstream tasks and
answers one of ``WAIT``, ``RELEASE``, ``UPSTREAM_FAILED`` or ``SKIP``.

Setup and teardown tasks (issue 25, Airflow's semantics; the graph side is in
:mod:`orchestrator.scheduling.setup_teardown`) add two inputs. ``setups``: the states
of the direct upstream tasks that are setups, which a teardown's rule,
``all_done_setup_success``, reads: it runs once every upstream task is done if one of
its setups succeeded, whatever happened between. ``indirect_setups``: the states of the
task's relevant setups that are not direct upstream tasks (a setup ran before the task
and tears down after it, or has no teardown); every rule but ``always`` needs them to
succeed: one that failed makes the task upstream_failed, one that was skipped skips it.

>>> decide("all_success", ["success", "success"]).value
'release'
>>> decide("all_success", ["success", "failed"]).value
'upstream_failed'
"""

from collections.abc import Iterable
from enum import StrEnum

from orchestrator.states import TASK_FINISHED, TaskState


class TriggerRule(StrEnum):
    ALL_SUCCESS = "all_success"
    ALL_FAILED = "all_failed"
    ALL_DONE = "all_done"
    ONE_SUCCESS = "one_success"
    ONE_FAILED = "one_failed"
    ONE_DONE = "one_done"
    NONE_FAILED = "none_failed"
    NONE_SKIPPED = "none_skipped"
    NONE_FAILED_MIN_ONE_SUCCESS = "none_failed_min_one_success"
    ALWAYS = "always"
    # issue 14: task controls (Airflow's names)
    ALL_DONE_MIN_ONE_SUCCESS = "all_done_min_one_success"
    ALL_SKIPPED = "all_skipped"
    # issue 25: a teardown's rule (Airflow's): every upstream task done, and a setup
    # among them succeeded (all_done when none of them is a setup)
    ALL_DONE_SETUP_SUCCESS = "all_done_setup_success"


class Decision(StrEnum):
    WAIT = "wait"
    RELEASE = "release"
    UPSTREAM_FAILED = "upstream_failed"
    SKIP = "skip"


_FAILED = {TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED}


def decide(
    rule: str,
    upstream_states: Iterable[str],
    *,
    setups: Iterable[str] = (),
    indirect_setups: Iterable[str] = (),
) -> Decision:
    """Decide what a task waiting on upstream tasks in ``upstream_states`` does now.

    ``setups``: the states among ``upstream_states`` that are setup tasks' (read by
    ``all_done_setup_success``); ``indirect_setups``: the states of the task's relevant
    setups that are not direct upstream tasks (see the module docstring).

    >>> decide("all_done_setup_success", ["success", "failed"], setups=["success"]).value
    'release'
    >>> decide("all_success", ["success"], indirect_setups=["failed"]).value
    'upstream_failed'
    """
    rule = TriggerRule(rule)
    states = [TaskState(s) for s in upstream_states]
    if rule is TriggerRule.ALWAYS or not states:
        return Decision.RELEASE
    indirect = [TaskState(s) for s in indirect_setups]
    if not indirect:  # the common case, kept as cheap as before setups existed
        return _direct(rule, states, [TaskState(s) for s in setups])
    constraint = _setup_constraint(indirect)
    if constraint in (Decision.UPSTREAM_FAILED, Decision.SKIP):
        return constraint
    decision = _direct(rule, states, [TaskState(s) for s in setups])
    if constraint is Decision.WAIT and decision is Decision.RELEASE:
        return Decision.WAIT
    return decision


def _setup_constraint(states: list[TaskState]) -> Decision:
    """What a task's indirect relevant setups allow: a failure anywhere fails it, a skip
    skips it, neither decided early (Airflow does not wait for the others); RELEASE
    only once all succeeded."""
    if any(s in _FAILED for s in states):
        return Decision.UPSTREAM_FAILED
    if TaskState.SKIPPED in states:
        return Decision.SKIP
    return Decision.RELEASE if all(s is TaskState.SUCCESS for s in states) else Decision.WAIT


def _direct(rule: TriggerRule, states: list[TaskState], setups: list[TaskState]) -> Decision:
    """The rule over the direct upstream tasks' states (``states`` is not empty)."""
    total = len(states)
    success = sum(s is TaskState.SUCCESS for s in states)
    failed = sum(s in _FAILED for s in states)
    skipped = sum(s is TaskState.SKIPPED for s in states)
    done = sum(s in TASK_FINISHED for s in states)
    all_done = done == total

    match rule:
        case TriggerRule.ALL_SUCCESS:
            if failed:
                return Decision.UPSTREAM_FAILED
            if skipped:
                return Decision.SKIP
            return Decision.RELEASE if success == total else Decision.WAIT
        case TriggerRule.ALL_FAILED:
            if success or skipped:
                return Decision.SKIP
            return Decision.RELEASE if failed == total else Decision.WAIT
        case TriggerRule.ALL_DONE:
            return Decision.RELEASE if all_done else Decision.WAIT
        case TriggerRule.ONE_SUCCESS:
            if success:
                return Decision.RELEASE
            if all_done:
                return Decision.UPSTREAM_FAILED if failed else Decision.SKIP
            return Decision.WAIT
        case TriggerRule.ONE_FAILED:
            if failed:
                return Decision.RELEASE
            return Decision.SKIP if all_done else Decision.WAIT
        case TriggerRule.ONE_DONE:
            # as Airflow: an upstream task that ran and succeeded or failed, not one that
            # was upstream_failed, skipped or cancelled without an outcome of its own
            if success or states.count(TaskState.FAILED):
                return Decision.RELEASE
            return Decision.SKIP if all_done else Decision.WAIT
        case TriggerRule.NONE_FAILED:
            if failed:
                return Decision.UPSTREAM_FAILED
            return Decision.RELEASE if all_done else Decision.WAIT
        case TriggerRule.NONE_SKIPPED:
            if skipped:
                return Decision.SKIP
            return Decision.RELEASE if all_done else Decision.WAIT
        case TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS:
            if failed:
                return Decision.UPSTREAM_FAILED
            if not all_done:
                return Decision.WAIT
            return Decision.RELEASE if success else Decision.SKIP
        case TriggerRule.ALL_DONE_MIN_ONE_SUCCESS:
            # every upstream task finished (whatever its state), and one succeeded
            if not all_done:
                return Decision.WAIT
            if success:
                return Decision.RELEASE
            return Decision.UPSTREAM_FAILED if failed else Decision.SKIP
        case TriggerRule.ALL_SKIPPED:
            # decided early: one upstream task that finished without being skipped
            if done > skipped:
                return Decision.SKIP
            return Decision.RELEASE if skipped == total else Decision.WAIT
        case TriggerRule.ALL_DONE_SETUP_SUCCESS:
            # issue 25: a teardown runs when its setup ran, whatever happened between;
            # it skips when every setup skipped, and is upstream_failed when none ran
            if not all_done:
                return Decision.WAIT
            if setups and all(s is TaskState.SKIPPED for s in setups):
                return Decision.SKIP
            if setups and TaskState.SUCCESS not in setups:
                return Decision.UPSTREAM_FAILED
            return Decision.RELEASE
        case TriggerRule.ALWAYS:  # pragma: no cover - decided in decide()
            return Decision.RELEASE
    raise AssertionError(rule)  # pragma: no cover
