"""Run and task-instance states, their allowed transitions and named groups.

States are stored as plain strings. Only the store's transition functions change a
state, each with a compare-and-set on the states it may move from; the tables below
document which moves exist (they are the reference for those WHERE clauses, not
consulted at run time).
"""

from enum import StrEnum


class RunState(StrEnum):
    QUEUED = "queued"  # created, waiting for a max_active_runs slot
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TaskState(StrEnum):
    SCHEDULED = "scheduled"  # created, waiting for its upstream tasks
    QUEUED = "queued"  # released: claimable by a worker
    RUNNING = "running"  # claimed under a lease
    UP_FOR_RETRY = "up_for_retry"  # failed a try, claimable again at ready_at
    # a sensor whose poke found its condition unmet: claimable again at ready_at (its
    # next poke), holding no worker slot meanwhile; the try number stays (issue 15)
    UP_FOR_RESCHEDULE = "up_for_reschedule"
    # issue 30: gave up its slot to wait for a trigger run by a triggerer; the trigger's
    # event queues it again (same try), its timeout or error fails the try
    DEFERRED = "deferred"
    SUCCESS = "success"
    FAILED = "failed"  # tries exhausted: dead-lettered
    UPSTREAM_FAILED = "upstream_failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


RUN_FINISHED = frozenset({RunState.SUCCESS, RunState.FAILED, RunState.CANCELLED})
RUN_ACTIVE = frozenset({RunState.QUEUED, RunState.RUNNING})

TASK_FINISHED = frozenset(
    {
        TaskState.SUCCESS,
        TaskState.FAILED,
        TaskState.UPSTREAM_FAILED,
        TaskState.SKIPPED,
        TaskState.CANCELLED,
    }
)
TASK_CLAIMABLE = frozenset({TaskState.QUEUED, TaskState.UP_FOR_RETRY, TaskState.UP_FOR_RESCHEDULE})
TASK_UNFINISHED = frozenset(set(TaskState) - TASK_FINISHED)

RUN_TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset({RunState.RUNNING, RunState.CANCELLED}),
    RunState.RUNNING: frozenset({RunState.SUCCESS, RunState.FAILED, RunState.CANCELLED}),
    RunState.SUCCESS: frozenset({RunState.RUNNING}),  # cleared
    RunState.FAILED: frozenset({RunState.RUNNING}),  # cleared
    RunState.CANCELLED: frozenset({RunState.RUNNING}),  # cleared
}

TASK_TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    TaskState.SCHEDULED: frozenset(
        {TaskState.QUEUED, TaskState.UPSTREAM_FAILED, TaskState.SKIPPED, TaskState.CANCELLED}
    ),
    TaskState.QUEUED: frozenset({TaskState.RUNNING, TaskState.CANCELLED, TaskState.SCHEDULED}),
    TaskState.RUNNING: frozenset(
        {
            TaskState.SUCCESS,
            TaskState.FAILED,
            TaskState.UP_FOR_RETRY,
            TaskState.CANCELLED,
            TaskState.QUEUED,  # handed back by a worker shutting down
            TaskState.UP_FOR_RESCHEDULE,  # a sensor's poke: not yet
            TaskState.SKIPPED,  # the task raised Skip (issue 14); a soft_fail sensor timed out
            TaskState.DEFERRED,  # ctx.defer(...): the try waits for its trigger (issue 30)
        }
    ),
    TaskState.UP_FOR_RETRY: frozenset({TaskState.RUNNING, TaskState.CANCELLED}),
    TaskState.UP_FOR_RESCHEDULE: frozenset({TaskState.RUNNING, TaskState.CANCELLED}),
    # issue 30: the event resumes it (queued, same try), a timeout or a trigger's error
    # ends the try (retried or failed); cleared or marked like any unfinished instance
    TaskState.DEFERRED: frozenset(
        {
            TaskState.QUEUED,
            TaskState.UP_FOR_RETRY,
            TaskState.FAILED,
            TaskState.CANCELLED,
            TaskState.SCHEDULED,
            TaskState.SUCCESS,
        }
    ),
    # finished states may only be cleared back to scheduled
    TaskState.SUCCESS: frozenset({TaskState.SCHEDULED}),
    TaskState.FAILED: frozenset({TaskState.SCHEDULED}),
    TaskState.UPSTREAM_FAILED: frozenset({TaskState.SCHEDULED}),
    TaskState.SKIPPED: frozenset({TaskState.SCHEDULED}),
    TaskState.CANCELLED: frozenset({TaskState.SCHEDULED}),
}


def sources_of(target: TaskState) -> frozenset[TaskState]:
    """States from which ``target`` may be reached (used in compare-and-set WHEREs)."""
    return frozenset(s for s, targets in TASK_TRANSITIONS.items() if target in targets)


def run_sources_of(target: RunState) -> frozenset[RunState]:
    return frozenset(s for s, targets in RUN_TRANSITIONS.items() if target in targets)


# issue 14: outcomes a task chooses itself, as the worker reports them to the store
SKIPPED_TRY = "skipped"  # the try state of a task that raised Skip (or exited skip_on_exit_code)
FAILED_NOW = "failed_now"  # a task that raised Fail: its try is recorded "failed", no retry
