"""Trigger rules: when a task may run, given its upstream tasks' states.

Pure code. :func:`decide` looks at the states of a task's direct upstream tasks and
answers one of ``WAIT``, ``RELEASE``, ``UPSTREAM_FAILED`` or ``SKIP``.

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


class Decision(StrEnum):
    WAIT = "wait"
    RELEASE = "release"
    UPSTREAM_FAILED = "upstream_failed"
    SKIP = "skip"


_FAILED = {TaskState.FAILED, TaskState.UPSTREAM_FAILED, TaskState.CANCELLED}


def decide(rule: str, upstream_states: Iterable[str]) -> Decision:
    """Decide what a task waiting on upstream tasks in ``upstream_states`` does now."""
    rule = TriggerRule(rule)
    states = [TaskState(s) for s in upstream_states]
    if rule is TriggerRule.ALWAYS or not states:
        return Decision.RELEASE
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
    raise AssertionError(rule)  # pragma: no cover
