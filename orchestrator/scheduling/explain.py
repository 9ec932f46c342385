"""Why is this task not running? Why was no run created? Pure answers over facts.

The store gathers the facts (:mod:`orchestrator.store.reads.explain_store`); this module
only reads them, so every cause is unit-tested without a database and the CLI
(``orchestrator tasks why``) and the web UI's task page show the same reasons.

Stable API: :func:`explain_task` (``TaskFacts -> list[Reason]``) and
:func:`explain_dag` (``DagFacts -> list[Reason]``). A :class:`Reason` has a stable
``code`` (``dag_paused``, ``run_queued``, ``upstream_waiting``...), a ``message`` for
people, and ``facts``, the values behind it, for machines.

>>> from datetime import UTC, datetime
>>> now = datetime(2026, 1, 1, tzinfo=UTC)
>>> facts = TaskFacts(now=now, dag_id="d", run_id="r", task_id="t", dag_paused=True,
...                   task_state="scheduled")
>>> [r.code for r in explain_task(facts)]
['dag_paused']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from orchestrator.clock import stamp
from orchestrator.scheduling.concurrency import GateFacts, blocked_by
from orchestrator.scheduling.trigger_rules import Decision, decide
from orchestrator.states import RunState, TaskState

# Reason codes (stable: the UI and --json consumers key on them)
DAG_PAUSED = "dag_paused"
DAG_INACTIVE = "dag_inactive"
RUN_QUEUED = "run_queued"
RUN_FINISHED = "run_finished"
UPSTREAM_WAITING = "upstream_waiting"
UPSTREAM_BLOCKED = "upstream_blocked"
NO_WORKER = "no_live_worker"
RETRY_BACKOFF = "retry_backoff"
LEASED = "leased"
LEASE_EXPIRED = "lease_expired"
DEAD_LETTERED = "dead_lettered"
FINISHED = "finished"
READY = "ready"
POOL_FULL = "pool_full"
NO_SCHEDULE = "no_schedule"
BEFORE_START = "before_start"
AFTER_END = "after_end"
EXHAUSTED = "schedule_exhausted"
MISFIRE_DECISION = "misfire_decision"
OVERLAP = "overlap_policy"
NO_LEADER = "no_leader"
NOT_DUE = "not_due"
RUN_EXISTS = "run_exists"
MAP_WAITING = "map_source_waiting"  # a mapped task waits for the list it maps over
MAP_EXPANDING = "map_expanding"
SENSOR_WAITING = "sensor_waiting"  # issue 15: a sensor between pokes
TRIGGER_WAITING = "trigger_waiting"  # issue 30: a deferred task waits for its trigger
NO_TRIGGERER = "no_live_triggerer"  # issue 30: ... and no live triggerer runs it


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


@dataclass(frozen=True)
class Reason:
    """One condition holding something back, with the fact behind it."""

    code: str
    message: str
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        facts = {
            k: [_iso_deep(x) for x in v] if isinstance(v, list | tuple) else _iso(v)
            for k, v in self.facts.items()
        }
        return {"code": self.code, "message": self.message, "facts": facts}


def _iso_deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _iso(v) for k, v in value.items()}
    return _iso(value)


@dataclass(frozen=True)
class SlotHolder:
    """A run holding one of a DAG's max_active_runs slots."""

    run_id: str
    logical_date: datetime


@dataclass(frozen=True)
class WorkerFact:
    worker_id: str
    queues: tuple[str, ...]
    heartbeat_at: datetime
    stopped_at: datetime | None = None


@dataclass(frozen=True)
class PoolFact:
    """A pool the task waits for: its size, who holds its slots and how many."""

    pool: str
    slots: int
    holders: tuple[str, ...]
    used: int | None = None  # slots held (tasks may take several); None: one per holder
    missing: bool = False  # no pool of that name exists


@dataclass(frozen=True)
class TriggerFact:
    """A deferred task's trigger (issue 30): what it is, since when, who runs it."""

    trigger_id: int
    classpath: str
    since: datetime
    timeout_at: datetime | None = None
    triggerer_id: str | None = None
    lease_expires_at: datetime | None = None
    live_triggerers: int = 0  # triggerers that heartbeated recently


@dataclass(frozen=True)
class TaskFacts:
    """Everything :func:`explain_task` looks at, gathered in one read."""

    now: datetime
    dag_id: str
    run_id: str
    task_id: str
    task_state: str
    dag_paused: bool = False
    dag_active: bool = True
    run_state: str = RunState.RUNNING
    run_logical_date: datetime | None = None
    max_active_runs: int = 16
    slot_holders: tuple[SlotHolder, ...] = ()
    trigger_rule: str = "all_success"
    upstream: tuple[tuple[str, str], ...] = ()  # (task_id, state)
    # issue 25: which upstream tasks are setups; the indirect setups' (task_id, state)
    setups: tuple[str, ...] = ()
    indirect_setups: tuple[tuple[str, str], ...] = ()
    queue: str = "default"
    workers: tuple[WorkerFact, ...] = ()
    worker_stale_after: timedelta = timedelta(seconds=30)
    try_number: int = 0
    max_tries: int = 1
    ready_at: datetime | None = None
    owner: str | None = None
    lease_expires_at: datetime | None = None
    owner_heartbeat_at: datetime | None = None
    error: str | None = None
    pools: tuple[PoolFact, ...] = ()
    # issue 14: depends_on_past, max_active_tasks, max_active_tis_per_dag (None: not gated)
    gate: GateFacts | None = None
    # runtime mapping: the instance's map index; for a mapped task not expanded yet,
    # the upstream tasks whose results it maps over
    map_index: int = -1
    map_sources: tuple[str, ...] = ()
    # issue 15: a sensor's current try: pokes that found it unmet, the first poke, and
    # when it times out (None: not a sensor)
    poke_count: int = 0
    first_poke_at: datetime | None = None
    sensor_deadline: datetime | None = None
    trigger: TriggerFact | None = None  # issue 30: a deferred task's trigger


def live_workers(facts: TaskFacts) -> list[WorkerFact]:
    """Workers not stopped whose heartbeat is fresher than ``worker_stale_after``."""
    return [
        w
        for w in facts.workers
        if w.stopped_at is None and facts.now - w.heartbeat_at <= facts.worker_stale_after
    ]


def explain_task(facts: TaskFacts) -> list[Reason]:
    """Every condition holding the task back, most fundamental first."""
    reasons: list[Reason] = []
    state = facts.task_state
    if state == TaskState.SUCCESS:
        return [Reason(FINISHED, "the task succeeded", {"state": state})]
    if state == TaskState.FAILED:
        return [
            Reason(
                DEAD_LETTERED,
                f"dead-lettered after {facts.try_number} tries (of {facts.max_tries}): "
                f"{_short(facts.error)}; `orchestrator tasks retry {facts.run_id} "
                f"{facts.task_id}` gives it another set of tries",
                {"tries": facts.try_number, "max_tries": facts.max_tries, "error": facts.error},
            )
        ]
    if state in (TaskState.UPSTREAM_FAILED, TaskState.SKIPPED, TaskState.CANCELLED):
        return [
            Reason(
                FINISHED,
                f"the task finished as {state}; clear it to run it again",
                {"state": state},
            )
        ]
    if not facts.dag_active:
        reasons.append(
            Reason(
                DAG_INACTIVE,
                f"DAG {facts.dag_id} is no longer in any DAG file",
                {"dag_id": facts.dag_id},
            )
        )
    if facts.dag_paused:
        reasons.append(
            Reason(DAG_PAUSED, f"DAG {facts.dag_id} is paused", {"dag_id": facts.dag_id})
        )
    reasons += _run_reasons(facts)
    if state == TaskState.SCHEDULED:
        reasons += _upstream_reasons(facts)
    if state == TaskState.UP_FOR_RETRY and facts.ready_at and facts.ready_at > facts.now:
        reasons.append(
            Reason(
                RETRY_BACKOFF,
                f"waiting for retry backoff until {stamp(facts.ready_at)} "
                f"(try {facts.try_number} of {facts.max_tries} failed: {_short(facts.error)})",
                {"ready_at": facts.ready_at, "try_number": facts.try_number, "error": facts.error},
            )
        )
    if state == TaskState.UP_FOR_RESCHEDULE and facts.ready_at and facts.ready_at > facts.now:
        reasons.append(_sensor_reason(facts))
    if state == TaskState.RUNNING:
        reasons.append(_lease_reason(facts))
    if state == TaskState.DEFERRED:  # issue 30
        reasons += _trigger_reasons(facts)
    if state in (TaskState.SCHEDULED, TaskState.QUEUED, TaskState.UP_FOR_RETRY,
                 TaskState.UP_FOR_RESCHEDULE):  # fmt: skip
        if facts.gate is not None:  # issue 14: what the claim checks (concurrency.py)
            reasons += [Reason(*b) for b in blocked_by(facts.gate)]
        reasons += _pool_reasons(facts)
        if not any(facts.queue in w.queues for w in live_workers(facts)):
            reasons.append(_no_worker(facts))
    if not reasons and state in (
        TaskState.QUEUED, TaskState.UP_FOR_RETRY, TaskState.UP_FOR_RESCHEDULE
    ):  # fmt: skip
        reasons.append(
            Reason(
                READY,
                f"ready: waiting for a worker on queue {facts.queue!r} to claim it",
                {"queue": facts.queue},
            )
        )
    return reasons


def _trigger_reasons(facts: TaskFacts) -> list[Reason]:
    t = facts.trigger
    if t is None:
        return [Reason(TRIGGER_WAITING, "deferred: waiting for its trigger", {})]
    held = t.triggerer_id is not None and t.lease_expires_at is not None
    held = held and t.lease_expires_at >= facts.now  # type: ignore[operator]
    by = f"run by triggerer {t.triggerer_id}" if held else "not yet taken by a triggerer"
    until = f"; it times out at {stamp(t.timeout_at)}" if t.timeout_at else ""
    reasons = [
        Reason(
            TRIGGER_WAITING,
            f"waiting for trigger {t.trigger_id} ({t.classpath}) since {stamp(t.since)}, "
            f"{by}{until}; it holds no worker slot meanwhile",
            {
                "trigger_id": t.trigger_id,
                "classpath": t.classpath,
                "since": t.since,
                "timeout_at": t.timeout_at,
                "triggerer_id": t.triggerer_id if held else None,
            },
        )  # fmt: skip
    ]
    if not held and t.live_triggerers == 0:
        reasons.append(
            Reason(
                NO_TRIGGERER,
                "no live triggerer: start one with `orchestrator triggerer` "
                "(`orchestrator standalone` runs one)",
                {},
            )
        )
    return reasons


def _sensor_reason(facts: TaskFacts) -> Reason:
    n = facts.poke_count
    until = f"; it times out at {stamp(facts.sensor_deadline)}" if facts.sensor_deadline else ""
    return Reason(
        SENSOR_WAITING,
        f"sensor waiting for its condition: next poke at {stamp(facts.ready_at)} "  # type: ignore[union-attr]
        f"({n} poke{'s' if n != 1 else ''} of try {facts.try_number} found it unmet"
        f"{until}); it holds no worker slot meanwhile",
        {"ready_at": facts.ready_at, "poke_count": n, "first_poke_at": facts.first_poke_at,
         "timeout_at": facts.sensor_deadline, "try_number": facts.try_number},
    )  # fmt: skip


def _run_reasons(facts: TaskFacts) -> list[Reason]:
    if facts.run_state == RunState.QUEUED:
        holders = [h.run_id for h in facts.slot_holders]
        return [
            Reason(
                RUN_QUEUED,
                f"run is queued behind max_active_runs={facts.max_active_runs}; "
                f"the slots are held by {', '.join(holders) or 'no run (starting soon)'}",
                {"max_active_runs": facts.max_active_runs, "holders": holders},
            )
        ]
    if facts.run_state != RunState.RUNNING:
        return [
            Reason(RUN_FINISHED, f"the run is {facts.run_state}", {"run_state": facts.run_state})
        ]
    return []


def _upstream_reasons(facts: TaskFacts) -> list[Reason]:
    states = [s for _t, s in facts.upstream]
    decision = decide(
        facts.trigger_rule,
        states,
        setups=[s for t, s in facts.upstream if t in facts.setups],
        indirect_setups=[s for _t, s in facts.indirect_setups],
    )
    if decision is Decision.RELEASE:
        if facts.map_sources:
            return [
                Reason(
                    MAP_EXPANDING,
                    f"{', '.join(facts.map_sources)} produced the list: the scheduler creates "
                    "one instance per item on its next tick",
                    {"sources": list(facts.map_sources)},
                )
            ]
        return []
    if decision is Decision.WAIT:
        pending = [(t, s) for t, s in facts.upstream + facts.indirect_setups if s not in _DONE]
        waiting_for = [t for t in facts.map_sources if any(p == t for p, _ in pending)]
        if waiting_for:
            out = [
                Reason(
                    MAP_WAITING,
                    f"waiting for {' and '.join(waiting_for)} to produce the list "
                    f"{facts.task_id} is mapped over (one instance per item)",
                    {"sources": waiting_for},
                )
            ]
            pending = [(t, s) for t, s in pending if t not in waiting_for]
            if not pending:
                return out
        else:
            out = []
        listed = ", ".join(f"{t} ({s})" for t, s in pending)
        return out + [
            Reason(
                UPSTREAM_WAITING,
                f"trigger rule {facts.trigger_rule} waits for upstream tasks: {listed}",
                {
                    "trigger_rule": facts.trigger_rule,
                    "upstream": [{"task_id": t, "state": s} for t, s in pending],
                },
            )
        ]
    listed = ", ".join(f"{t} ({s})" for t, s in facts.upstream)
    if facts.indirect_setups:
        listed += "; setups: " + ", ".join(f"{t} ({s})" for t, s in facts.indirect_setups)
    return [
        Reason(
            UPSTREAM_BLOCKED,
            f"trigger rule {facts.trigger_rule} can no longer be met ({decision}); "
            f"upstream: {listed}; the scheduler will mark it on its next tick",
            {
                "trigger_rule": facts.trigger_rule,
                "decision": str(decision),
                "upstream": [{"task_id": t, "state": s} for t, s in facts.upstream],
            },
        )
    ]


_DONE = {"success", "failed", "upstream_failed", "skipped", "cancelled"}


def _lease_reason(facts: TaskFacts) -> Reason:
    exp = facts.lease_expires_at
    hb = facts.owner_heartbeat_at
    data = {
        "owner": facts.owner,
        "lease_expires_at": exp,
        "last_heartbeat": hb,
        "try_number": facts.try_number,
    }
    beat = f" (last heartbeat at {stamp(hb)})" if hb else ""
    if exp is not None and exp <= facts.now:
        return Reason(
            LEASE_EXPIRED,
            f"leased by worker {facts.owner} but the lease expired at "
            f"{stamp(exp)}{beat}; the scheduler will reap it",
            data,
        )
    until = stamp(exp) if exp else "?"
    return Reason(
        LEASED,
        f"running: leased by worker {facts.owner} until {until}{beat}, "
        f"try {facts.try_number} of {facts.max_tries}",
        data,
    )


def _pool_reasons(facts: TaskFacts) -> list[Reason]:
    reasons = []
    for p in facts.pools:
        data = {"pool": p.pool, "slots": p.slots, "holders": list(p.holders)}
        if p.missing:
            reasons.append(
                Reason(
                    POOL_FULL,
                    f"pool {p.pool} does not exist: create it with "
                    f"'orchestrator pools set {p.pool} SLOTS'",
                    data,
                )
            )
        elif (p.used if p.used is not None else len(p.holders)) >= p.slots:
            held = ", ".join(p.holders) or "nobody (it has 0 slots)"
            reasons.append(
                Reason(POOL_FULL, f"pool {p.pool} is full ({p.slots} slots), held by {held}", data)
            )
    return reasons


def _no_worker(facts: TaskFacts) -> Reason:
    known = [w for w in facts.workers if facts.queue in w.queues]
    last = max((w.heartbeat_at for w in known), default=None)
    seen = f"; last heartbeat from one at {stamp(last)}" if last else "; none ever seen"
    return Reason(
        NO_WORKER,
        f"no live worker listens on queue {facts.queue!r}{seen}",
        {
            "queue": facts.queue,
            "last_heartbeat": last,
            "live_workers": [w.worker_id for w in live_workers(facts)],
        },
    )


def _short(text: str | None, limit: int = 200) -> str:
    if not text:
        return "no error recorded"
    line = text.strip().splitlines()[-1] if text.strip() else text
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass(frozen=True)
class DagFacts:
    """What :func:`explain_dag` looks at: a DAG's schedule state and the latest decisions."""

    now: datetime
    dag_id: str
    has_schedule: bool = True
    is_paused: bool = False
    is_active: bool = True
    start_date: datetime | None = None
    end_date: datetime | None = None
    schedule_exhausted: bool = False
    expected_fire: datetime | None = None  # the latest fire time due at now
    next_fire: datetime | None = None
    run_for_expected: str | None = None  # run_id of the run for expected_fire, if any
    misfire_events: tuple[tuple[datetime, str, str], ...] = ()  # (at, kind, message)
    overlap: str = "queue"
    max_active_runs: int = 16
    active_runs: tuple[SlotHolder, ...] = ()
    leader: str | None = None
    leader_expires_at: datetime | None = None


def explain_dag(facts: DagFacts) -> list[Reason]:
    """Why no run was created at the expected time (or that one was)."""
    reasons: list[Reason] = []
    if not facts.is_active:
        reasons.append(Reason(DAG_INACTIVE, f"DAG {facts.dag_id} is no longer in any DAG file", {}))
    if not facts.has_schedule:
        reasons.append(Reason(NO_SCHEDULE, "the DAG has no schedule: runs are manual only", {}))
        return reasons
    if facts.is_paused:
        reasons.append(Reason(DAG_PAUSED, f"DAG {facts.dag_id} is paused", {}))
    if facts.start_date and facts.now < facts.start_date:
        reasons.append(
            Reason(
                BEFORE_START,
                f"start_date {stamp(facts.start_date)} has not come yet",
                {"start_date": facts.start_date},
            )
        )
    if facts.end_date and facts.now > facts.end_date:
        reasons.append(
            Reason(
                AFTER_END,
                f"end_date {stamp(facts.end_date)} has passed",
                {"end_date": facts.end_date},
            )
        )
    if facts.schedule_exhausted:
        reasons.append(Reason(EXHAUSTED, "the schedule has no fire times left", {}))
    if facts.leader is None or (facts.leader_expires_at and facts.leader_expires_at <= facts.now):
        when = stamp(facts.leader_expires_at) if facts.leader_expires_at else "never held"
        reasons.append(
            Reason(
                NO_LEADER,
                f"no scheduler holds the leader lease "
                f"(last holder {facts.leader or 'none'}, expired {when})",
                {"leader": facts.leader, "expires_at": facts.leader_expires_at},
            )
        )
    for at, kind, message in facts.misfire_events:
        reasons.append(
            Reason(MISFIRE_DECISION, f"{stamp(at)} {kind}: {message}", {"at": at, "kind": kind})
        )
    if (
        facts.expected_fire is not None
        and facts.run_for_expected is None
        and facts.overlap == "skip"
        and len(facts.active_runs) >= facts.max_active_runs
    ):
        holders = [h.run_id for h in facts.active_runs]
        reasons.append(
            Reason(
                OVERLAP,
                f"overlap='skip' with max_active_runs="
                f"{facts.max_active_runs} held by {', '.join(holders)}",
                {"holders": holders},
            )
        )
    if facts.run_for_expected is not None:
        reasons.append(
            Reason(
                RUN_EXISTS,
                f"run {facts.run_for_expected} was created for "
                f"{stamp(facts.expected_fire) if facts.expected_fire else '?'}",
                {"run_id": facts.run_for_expected},
            )
        )
    if facts.expected_fire is None and not reasons:
        nxt = stamp(facts.next_fire) if facts.next_fire else "none"
        reasons.append(
            Reason(
                NOT_DUE,
                f"no fire time is due yet; next fire at {nxt}",
                {"next_fire": facts.next_fire},
            )
        )
    return reasons
