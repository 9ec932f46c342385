"""Releasing task instances: the scheduler's general pass and the finish fast path.

``release_ready`` (the scheduler) decides every scheduled task of every running run
by its trigger rule, with the runs' rows locked, and applies RELEASE, SKIP and
UPSTREAM_FAILED set-based. ``release_after_success`` runs inside the transaction that
records a success (``finish.py``), with that run's row locked too: it queues the
finished task's direct downstream tasks that the scheduler would certainly release
now, and nothing else:

- ``one_success``: an upstream task just succeeded, so ``decide`` says RELEASE;
- ``all_success``: RELEASE exactly when every upstream task is ``success``, checked
  in SQL: the upstream states directly for a small fan-in, else by counting the run's
  non-success task instances minus those of the (small) complement of the upstream
  set, so the 1000-upstream ``end`` of a wide DAG costs one indexed count, not 1000
  rows.

A task with indirect setups (issue 25: setups before it that are not its direct
upstream tasks, :mod:`orchestrator.scheduling.setup_teardown`) counts them as upstream
tasks of its ``all_success`` here, and leaves any other rule to the scheduler.

Everything else (other rules, failures, skips) is left to ``release_ready`` and the
caller is told to wake the scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from sqlalchemy import Connection, bindparam, select, update

from orchestrator.authoring.spec import DagSpec, TaskSpec
from orchestrator.scheduling.mapping import UNMAPPED, group_of, task_sources
from orchestrator.scheduling.trigger_rules import Decision, TriggerRule, decide
from orchestrator.states import TASK_FINISHED, TASK_UNFINISHED, RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, lock_runs
from orchestrator.store.tasks.expansion import expand_group_locked, expand_locked

ti = m.task_instances
# fan-ins up to this size are checked by their upstream states, larger ones by the
# complement; both larger than this are left to the scheduler
SMALL = 64
_NOT_OK = list(TASK_FINISHED - {TaskState.SUCCESS})


def release_after_success(
    conn: Connection,
    spec: DagSpec,
    run_pk: int,
    task_ids: Iterable[str],
    now: datetime,
    max_map_length: int = 10_000,
) -> tuple[int, bool]:
    """Queue the downstream tasks that the successes of ``task_ids`` made releasable.

    Each downstream task is decided once, however many of its upstream tasks are in
    the batch. Returns (how many were queued, whether the scheduler still has
    something to decide). The caller holds the run's lock and has just recorded the
    successes.
    """
    release: list[str] = []
    needs = False
    small: list[tuple[str, tuple[str, ...]]] = []
    downstream = sorted({d for t in task_ids for d in spec.downstream[t]})
    scopes = spec.setup_teardown
    for d in downstream:
        t = spec.tasks[d]
        if group_of(t.mapping) is not None:
            needs = True  # issue 25 item 7: decided per group instance, by the scheduler
            continue
        indirect = scopes.indirect_setups(d)  # issue 25: must succeed too
        ups = t.upstream + indirect
        if t.trigger_rule == TriggerRule.ONE_SUCCESS and not indirect:
            release.append(d)
        elif t.trigger_rule != TriggerRule.ALL_SUCCESS:
            needs = True
        elif any(u in spec.mapped_tasks for u in ups):  # all instances, two indexed EXISTS
            verdict = _all_success_of(conn, run_pk, ups)
            if verdict is Decision.RELEASE:
                release.append(d)
            elif verdict is not Decision.WAIT or indirect:
                needs = True
        elif len(ups) <= SMALL:
            small.append((d, ups))
        elif indirect:
            needs = True
        elif len(spec.tasks) - len(t.upstream) <= SMALL:
            verdict = _all_success_by_complement(conn, run_pk, spec.upstream_complement(d))
            if verdict is Decision.RELEASE:
                release.append(d)
            elif verdict is not Decision.WAIT:
                needs = True
        else:
            needs = True
    if small:
        wanted = sorted({u for _, ups in small for u in ups})
        states = dict(conn.execute(_STATES_OF, {"run_pk": run_pk, "task_ids": wanted}).all())
        for d, ups in small:
            ups_states = [states.get(u) for u in ups]
            if all(s == TaskState.SUCCESS for s in ups_states):
                release.append(d)
            elif any(s in _NOT_OK for s in ups_states) or len(ups) > len(spec.tasks[d].upstream):
                needs = True  # upstream_failed, skip, or a setup not done: the scheduler's
    if not release:
        return 0, needs
    plain = sorted(d for d in release if d not in spec.mapped_tasks)
    released = 0
    if plain:
        released = conn.execute(
            _QUEUE, {"b_run_pk": run_pk, "b_task_ids": plain, "b_now": now}
        ).rowcount
    mapped = [d for d in release if d in spec.mapped_tasks]
    if mapped:  # released mapped tasks are expanded here, in the same transaction
        released += expand_locked(conn, spec, run_pk, mapped, now, max_map_length)
    return released, needs


def _upstream_in(states: Iterable[str]) -> object:
    """Does a task instance of the run, outside ``others``, have one of ``states``?
    (One index range per state on (run_pk, state), stopping at the first hit.)"""
    return (
        select(ti.c.id)
        .where(
            ti.c.run_pk == bindparam("run_pk"),
            ti.c.state.in_(sorted(states)),
            ti.c.task_id.not_in(bindparam("others", expanding=True)),
        )
        .exists()
    )


# built once: these run for every batch of finished tasks
_QUEUE = (
    update(ti)
    .where(
        ti.c.run_pk == bindparam("b_run_pk"),
        ti.c.task_id.in_(bindparam("b_task_ids", expanding=True)),
        ti.c.state == TaskState.SCHEDULED,
    )
    .values(state=TaskState.QUEUED, ready_at=bindparam("b_now"))
)
_BY_COMPLEMENT = select(_upstream_in(_NOT_OK), _upstream_in(TASK_UNFINISHED))


def _instance_in(states: Iterable[str]) -> object:
    """Does an instance of the tasks ``ups`` of the run have one of ``states``?"""
    return (
        select(ti.c.id)
        .where(
            ti.c.run_pk == bindparam("run_pk"),
            ti.c.state.in_(sorted(states)),
            ti.c.task_id.in_(bindparam("ups", expanding=True)),
        )
        .exists()
    )


_BY_UPSTREAM = select(_instance_in(_NOT_OK), _instance_in(TASK_UNFINISHED))
_STATES_OF = select(ti.c.task_id, ti.c.state).where(
    ti.c.run_pk == bindparam("run_pk"), ti.c.task_id.in_(bindparam("task_ids", expanding=True))
)


def _all_success_of(conn: Connection, run_pk: int, upstream: tuple[str, ...]) -> Decision:
    """all_success over every instance of ``upstream`` (mapped tasks included): RELEASE
    if all are success, WAIT while any is unfinished and none failed, else SKIP
    (meaning: not ours to decide)."""
    failed, unfinished = conn.execute(
        _BY_UPSTREAM, {"run_pk": run_pk, "ups": sorted(upstream)}
    ).one()
    if failed:
        return Decision.SKIP
    return Decision.WAIT if unfinished else Decision.RELEASE


def _all_success_by_complement(conn: Connection, run_pk: int, others: tuple[str, ...]) -> Decision:
    """For a task whose upstream set is the run's tasks minus ``others``: RELEASE if all
    are success, WAIT if none is finished otherwise, else SKIP (meaning: not ours)."""
    failed, unfinished = conn.execute(
        _BY_COMPLEMENT, {"run_pk": run_pk, "others": list(others)}
    ).one()
    if failed:
        return Decision.SKIP
    return Decision.WAIT if unfinished else Decision.RELEASE


class ReleaseStore(StoreBase):
    def release_ready(self, now: datetime, *, between: Callable[[], None] | None = None) -> int:
        """Queue scheduled tasks whose trigger rule is met; propagate skips and failures.

        Looks only at running runs of unpaused DAGs that still have scheduled tasks.
        Decisions are made from states read in the same write transaction that applies
        them, with the runs' rows locked (``FOR UPDATE`` on PostgreSQL, the writer lock
        on SQLite), so a concurrent ``clear_task`` or a second scheduler can never make
        a decision rest on stale upstream states. Returns how many task instances changed.
        """
        r = m.dag_runs
        with self.read() as conn:
            runs = conn.execute(
                select(r.c.id, r.c.dag_id, r.c.version_hash)
                .join(m.dags, m.dags.c.dag_id == r.c.dag_id)
                .where(
                    r.c.state == RunState.RUNNING,
                    m.dags.c.is_paused.is_(False),
                    select(ti.c.id)
                    .where(ti.c.run_pk == r.c.id, ti.c.state == TaskState.SCHEDULED)
                    .exists(),
                )
                .order_by(r.c.id)
            ).all()
        if not runs:
            return 0
        specs = {run.id: self.spec(run.dag_id, run.version_hash) for run in runs}  # type: ignore[attr-defined]
        changed = 0
        for batch in _chunks([run.id for run in runs], 200):
            if between is not None:  # the scheduler's lease and stop check (issue 29)
                between()
            with self.write() as conn:
                lock_runs(conn, batch, self.is_postgres)
                # a mapped task group expanded in a pass is decided in the next one, in
                # the same transaction (its instances are created scheduled)
                for _ in range(3):
                    done, expanded = self._release_pass(conn, batch, specs, now)
                    changed += done
                    if not expanded:
                        break
        return changed

    def _release_pass(
        self, conn: Connection, batch: list[int], specs: dict[int, DagSpec], now: datetime
    ) -> tuple[int, bool]:
        """One decision pass over the runs ``batch`` (locked); returns (how many task
        instances changed, whether a mapped task group was expanded)."""
        r = m.dag_runs
        rows = conn.execute(
            select(ti.c.id, ti.c.run_pk, ti.c.task_id, ti.c.state, ti.c.map_index)
            .join(r, r.c.id == ti.c.run_pk)
            .where(ti.c.run_pk.in_(batch), r.c.state == RunState.RUNNING)
        ).all()
        # every instance of a task counts (a mapped task has one per map item)
        by_run: dict[int, dict[str, list[tuple[int, str, int]]]] = {}
        for row in rows:
            by_run.setdefault(row.run_pk, {}).setdefault(row.task_id, []).append(
                (row.id, row.state, row.map_index)
            )
        to_queue: list[int] = []
        to_expand: list[tuple[int, str]] = []
        groups: set[tuple[int, str]] = set()
        to_final: dict[str, list[int]] = {TaskState.UPSTREAM_FAILED: [], TaskState.SKIPPED: []}
        for run_pk, tasks in by_run.items():
            spec = specs[run_pk]
            scopes = spec.setup_teardown  # issue 25
            states = {k: [v[1] for v in vs] for k, vs in tasks.items()}
            for task_id in spec.topological_order:
                waiting = [v for v in tasks.get(task_id, ()) if v[1] == TaskState.SCHEDULED]
                if not waiting:
                    continue
                t = spec.tasks[task_id]
                group = spec.mapped_group_of(task_id)
                if group is not None:  # issue 25 item 7: per group instance
                    if any(v[2] == UNMAPPED for v in waiting):
                        if _sources_finished(t, states):
                            groups.add((run_pk, group))
                        continue
                    states[task_id] = _decide_instances(
                        spec, t, tasks, waiting, states, to_queue, to_final
                    )
                    continue
                ups = [s for u in t.upstream for s in states.get(u, ())]
                ind = scopes.indirect_setups(task_id)
                decision = decide(
                    t.trigger_rule,
                    ups,
                    setups=_setup_states(spec, t, states),
                    indirect_setups=[s for u in ind for s in states.get(u, ())],
                )
                ids = [v[0] for v in waiting]
                if decision is Decision.RELEASE:
                    if t.mapped and any(v[2] == UNMAPPED for v in waiting):
                        to_expand.append((run_pk, task_id))
                    else:
                        to_queue.extend(ids)
                    new = TaskState.QUEUED
                elif decision is Decision.UPSTREAM_FAILED:
                    to_final[TaskState.UPSTREAM_FAILED].extend(ids)
                    new = TaskState.UPSTREAM_FAILED
                elif decision is Decision.SKIP:
                    to_final[TaskState.SKIPPED].extend(ids)
                    new = TaskState.SKIPPED
                else:
                    continue
                states[task_id] = [new if s == TaskState.SCHEDULED else s for s in states[task_id]]
        changed = 0
        for run_pk, task_id in to_expand:
            changed += expand_locked(
                conn, specs[run_pk], run_pk, [task_id], now, self.max_map_length
            )
        for run_pk, group in sorted(groups):
            changed += expand_group_locked(
                conn, specs[run_pk], run_pk, group, now, self.max_map_length
            )
        for chunk in _chunks(sorted(to_queue), 500):
            changed += conn.execute(
                update(ti)
                .where(ti.c.id.in_(chunk), ti.c.state == TaskState.SCHEDULED)
                .values(state=TaskState.QUEUED, ready_at=now)
            ).rowcount
        for state, ids in to_final.items():
            for chunk in _chunks(sorted(ids), 500):
                changed += conn.execute(
                    update(ti)
                    .where(ti.c.id.in_(chunk), ti.c.state == TaskState.SCHEDULED)
                    .values(state=state, end_date=now)
                ).rowcount
        return changed, bool(groups)


_FINAL = {Decision.UPSTREAM_FAILED: TaskState.UPSTREAM_FAILED, Decision.SKIP: TaskState.SKIPPED}


def _sources_finished(t: TaskSpec, states: dict[str, list[str]]) -> bool:
    """Can the mapped group of ``t`` be expanded: has every task its items come from
    finished (a failed or skipped one fails or skips the group at expansion)?"""
    return all(
        states.get(source) and all(s in TASK_FINISHED for s in states[source])
        for source in task_sources(t.mapping)
    )


def _decide_instances(
    spec: DagSpec,
    t: TaskSpec,
    tasks: dict[str, list[tuple[int, str, int]]],
    waiting: list[tuple[int, str, int]],
    states: dict[str, list[str]],
    to_queue: list[int],
    to_final: dict[str, list[int]],
) -> list[str]:
    """Decide each waiting instance of a task of a mapped group by its trigger rule over
    instance ``i`` of its upstream tasks in the group and every instance of the others
    (issue 25 item 7); returns the task's instance states after the decisions."""
    same = spec.same_instance_upstream(t.task_id)
    others = [s for u in t.upstream if u not in same for s in states.get(u, ())]
    at = {u: {v[2]: v[1] for v in tasks.get(u, ())} for u in same}
    ind = spec.setup_teardown.indirect_setups(t.task_id)
    indirect = [s for u in ind for s in states.get(u, ())]
    new_of: dict[int, str] = {}
    for ti_id, _, index in waiting:
        ups = others + [at[u].get(index, TaskState.SCHEDULED) for u in same]
        decision = decide(t.trigger_rule, ups, indirect_setups=indirect)
        if decision is Decision.RELEASE:
            to_queue.append(ti_id)
            new_of[index] = TaskState.QUEUED
        elif decision in _FINAL:
            to_final[_FINAL[decision]].append(ti_id)
            new_of[index] = _FINAL[decision]
    current = tasks.get(t.task_id, ())
    for i, (ti_id, _state, index) in enumerate(current):  # for the tasks after it
        if index in new_of:
            current[i] = (ti_id, new_of[index], index)  # type: ignore[index]
    return [v[1] for v in current]


def _setup_states(spec: DagSpec, t: TaskSpec, states: dict[str, list[str]]) -> list[str]:
    """The states of a teardown's direct upstream setups (what its rule reads)."""
    if t.trigger_rule != TriggerRule.ALL_DONE_SETUP_SUCCESS:
        return []
    return [s for u in t.upstream if spec.tasks[u].is_setup for s in states.get(u, ())]


def _chunks(items: list[int], size: int) -> Iterable[list[int]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
