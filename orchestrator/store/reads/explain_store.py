"""Gathering the facts the explainer judges (:mod:`orchestrator.scheduling.explain`), and dead
letters: listing exhausted task instances and giving them another set of tries."""

from __future__ import annotations

from datetime import datetime, timedelta

import networkx as nx
from sqlalchemy import func, select, update

from orchestrator.authoring.task_controls import is_gated
from orchestrator.errors import NotFoundError, StateError
from orchestrator.scheduling.explain import (
    DagFacts,
    PoolFact,
    SlotHolder,
    TaskFacts,
    TriggerFact,
    WorkerFact,
)
from orchestrator.scheduling.mapping import task_sources
from orchestrator.scheduling.sensors import SensorPolicy
from orchestrator.states import RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, lock_runs, record_event
from orchestrator.store.core.records import TaskInstanceRecord
from orchestrator.store.tasks.concurrency import gate_facts

ti, r, w = m.task_instances, m.dag_runs, m.workers
MISFIRE_EVENTS = ("fire_skipped", "fire_coalesced", "fire_expired", "run_cancelled",
                  "schedule_exhausted", "dag_paused")  # fmt: skip


class ExplainStore(StoreBase):
    def task_facts(
        self,
        run_id: str,
        task_id: str,
        now: datetime,
        *,
        worker_stale_after: timedelta,
        map_index: int | None = None,
    ) -> TaskFacts:
        run = self.get_run(run_id)  # type: ignore[attr-defined]
        inst = self.task_instance(run_id, task_id, map_index)  # type: ignore[attr-defined]
        dag = self.get_dag(run.dag_id)  # type: ignore[attr-defined]
        spec = self.spec(run.dag_id, run.version_hash)  # type: ignore[attr-defined]
        task = spec.tasks.get(task_id)
        upstream = task.upstream if task else ()
        indirect = spec.setup_teardown.indirect_setups(task_id) if task else ()  # issue 25
        with self.read() as conn:
            # one (task, state) per distinct state: a mapped upstream task's instances
            # count by state, which decides every trigger rule as the instances would
            pairs = conn.execute(
                select(ti.c.task_id, ti.c.state)
                .where(ti.c.run_pk == run.id, ti.c.task_id.in_([*upstream, *indirect]))
                .distinct()
            ).all()
            states: dict[str, list[str]] = {}
            for up_id, up_state in pairs:
                states.setdefault(up_id, []).append(up_state)
            holders = conn.execute(
                select(r.c.run_id, r.c.logical_date)
                .where(r.c.dag_id == run.dag_id, r.c.state == RunState.RUNNING)
                .order_by(r.c.logical_date)
            ).all()
            workers = conn.execute(select(w)).all()
            pools = self._pool_facts(conn, task.pool if task else None, inst.state)
            gate = None  # issue 14: the claim-time checks of a gated task
            if task is not None and is_gated(task, spec.max_active_tasks):
                gate = gate_facts(conn, spec, task_id, run.logical_date)
        facts = [
            WorkerFact(x.worker_id, tuple(q for q in x.queues.split(",") if q), x.heartbeat_at,
                       x.stopped_at)
            for x in workers
        ]  # fmt: skip
        owner_beat = next((f.heartbeat_at for f in facts if f.worker_id == inst.owner), None)
        return TaskFacts(
            now=now, dag_id=run.dag_id, run_id=run_id, task_id=task_id, task_state=inst.state,
            dag_paused=dag.is_paused, dag_active=dag.is_active, run_state=run.state,
            run_logical_date=run.logical_date, max_active_runs=spec.max_active_runs,
            slot_holders=tuple(SlotHolder(h.run_id, h.logical_date) for h in holders),
            trigger_rule=task.trigger_rule if task else "all_success",
            upstream=tuple((u, s) for u in upstream for s in sorted(states.get(u, ["missing"]))),
            setups=tuple(u for u in upstream if spec.tasks[u].is_setup),
            indirect_setups=tuple((u, s) for u in indirect for s in sorted(states.get(u, ()))),
            map_index=inst.map_index,
            map_sources=(
                task_sources(task.mapping) if task and task.mapped and inst.map_index < 0 else ()
            ),
            queue=inst.queue, workers=tuple(facts), worker_stale_after=worker_stale_after,
            try_number=inst.try_number, max_tries=inst.max_tries, ready_at=inst.ready_at,
            owner=inst.owner, lease_expires_at=inst.lease_expires_at,
            owner_heartbeat_at=owner_beat, error=inst.error, pools=pools, gate=gate,
            **_sensor_facts(task, inst),
            trigger=_trigger_fact(conn, inst, now, worker_stale_after),  # issue 30
        )  # fmt: skip

    def _pool_facts(self, conn, pool: str | None, state: str) -> tuple[PoolFact, ...]:
        """The task's pool, when it waits for one: its size and who holds its slots."""
        if pool is None or state not in (
            TaskState.QUEUED, TaskState.UP_FOR_RETRY, TaskState.UP_FOR_RESCHEDULE
        ):  # fmt: skip
            return ()
        slots = conn.execute(select(m.pools.c.slots).where(m.pools.c.name == pool)).scalar()
        held = conn.execute(
            select(ti.c.run_id, ti.c.task_id, ti.c.pool_slots)
            .where(ti.c.pool == pool, ti.c.state == TaskState.RUNNING)
            .order_by(ti.c.id)
        ).all()
        holders = tuple(f"{h.task_id} in {h.run_id}" for h in held)
        return (
            PoolFact(pool, slots or 0, holders, sum(h.pool_slots for h in held), slots is None),
        )

    def dag_facts(self, dag_id: str, now: datetime) -> DagFacts:
        dag = self.get_dag(dag_id)  # type: ignore[attr-defined]
        spec = self.spec(dag_id, dag.version_hash)  # type: ignore[attr-defined]
        sched = spec.schedule
        expected = sched.previous_before(now) if sched.kind != "none" else None
        e = m.events
        with self.read() as conn:
            run_for = None
            if expected is not None:
                run_for = conn.execute(
                    select(r.c.run_id).where(r.c.dag_id == dag_id, r.c.logical_date == expected)
                ).scalar()
            decisions = conn.execute(
                select(e.c.at, e.c.kind, e.c.message)
                .where(e.c.dag_id == dag_id, e.c.kind.in_(MISFIRE_EVENTS))
                .order_by(e.c.id.desc()).limit(5)
            ).all()  # fmt: skip
            active = conn.execute(
                select(r.c.run_id, r.c.logical_date)
                .where(r.c.dag_id == dag_id, r.c.state == RunState.RUNNING)
                .order_by(r.c.logical_date)
            ).all()
        leader = self.leader()  # type: ignore[attr-defined]
        return DagFacts(
            now=now, dag_id=dag_id, has_schedule=sched.kind != "none", is_paused=dag.is_paused,
            is_active=dag.is_active, start_date=spec.start_date, end_date=spec.end_date,
            schedule_exhausted=dag.schedule_exhausted, expected_fire=expected,
            next_fire=dag.next_logical_date or (sched.next_after(now) if expected else None),
            run_for_expected=run_for,
            misfire_events=tuple((d.at, d.kind, d.message) for d in reversed(decisions)
                                 if expected is None or d.at >= expected),
            overlap=spec.overlap, max_active_runs=spec.max_active_runs,
            active_runs=tuple(SlotHolder(a.run_id, a.logical_date) for a in active),
            leader=leader[0] if leader else None, leader_expires_at=leader[2] if leader else None,
        )  # fmt: skip

    # -- dead letters --------------------------------------------------------------------
    def dead_letters(self, dag_id: str | None = None, limit: int = 100) -> list[TaskInstanceRecord]:
        """Task instances whose tries are exhausted (state failed), newest first."""
        q = select(ti).where(ti.c.state == TaskState.FAILED)
        if dag_id:
            q = q.where(ti.c.dag_id == dag_id)
        with self.read() as conn:
            rows = conn.execute(q.order_by(ti.c.end_date.desc(), ti.c.id.desc()).limit(limit))
            return [TaskInstanceRecord.from_row(row) for row in rows]

    def retry_dead_letter(
        self,
        run_id: str,
        task_id: str,
        now: datetime,
        *,
        who: str | None = None,
        map_index: int | None = None,
    ) -> list[str]:
        """Give a dead-lettered task one more set of tries (its ``retries + 1``).

        Compare-and-set failed -> scheduled; the downstream tasks it failed
        (upstream_failed, skipped) are reset with it and the run runs again. Returns the
        task ids reset. StateError if the task is not dead-lettered. ``map_index``
        retries only that instance of a mapped task (default: every failed one).
        """
        run = self.get_run(run_id)  # type: ignore[attr-defined]
        spec = self.spec(run.dag_id, run.version_hash)  # type: ignore[attr-defined]
        if task_id not in spec.tasks:
            raise NotFoundError(f"run {run_id!r} has no task {task_id!r}")
        downstream = sorted(nx.descendants(spec.graph, task_id))
        one = [] if map_index is None else [ti.c.map_index == map_index]
        if map_index is not None:
            self.task_instance(run_id, task_id, map_index)  # type: ignore[attr-defined]
        with self.write() as conn:
            lock_runs(conn, [run.id], self.is_postgres)
            done = conn.execute(
                update(ti)
                .where(ti.c.run_pk == run.id, ti.c.task_id == task_id,
                       ti.c.state == TaskState.FAILED, *one)
                .values(state=TaskState.SCHEDULED, owner=None, lease_expires_at=None,
                        ready_at=None, end_date=None, lost_tries=0,
                        max_tries=ti.c.try_number + spec.tasks[task_id].max_tries)
            ).rowcount  # fmt: skip
            if not done:
                state = self.task_instance(run_id, task_id, map_index).state  # type: ignore[attr-defined]
                raise StateError(
                    f"task {task_id!r} of run {run_id!r} is {state}, not dead-lettered (failed)"
                )
            cleared = [task_id if map_index is None else f"{task_id}[{map_index}]"]
            for t in downstream:
                if conn.execute(
                    update(ti)
                    .where(ti.c.run_pk == run.id, ti.c.task_id == t,
                           ti.c.state.in_([TaskState.UPSTREAM_FAILED, TaskState.SKIPPED]))
                    .values(state=TaskState.SCHEDULED, end_date=None)
                ).rowcount:  # fmt: skip
                    cleared.append(t)
            conn.execute(
                update(r)
                .where(r.c.id == run.id, r.c.state != RunState.QUEUED)
                .values(state=RunState.RUNNING, end_date=None)
            )
            record_event(conn, now, "task_retried",
                         f"dead letter given {spec.tasks[task_id].max_tries} more tries; "
                         f"reset {', '.join(cleared)}",
                         dag_id=run.dag_id, run_id=run_id, task_id=task_id,
                         actor=who)  # fmt: skip
        return cleared


def _trigger_fact(
    conn, inst: TaskInstanceRecord, now: datetime, stale: timedelta
) -> TriggerFact | None:
    """A deferred instance's trigger and whether any triggerer is alive (issue 30)."""
    if inst.state != TaskState.DEFERRED or inst.trigger_id is None:
        return None
    t, tg = m.triggers, m.triggerers
    row = conn.execute(select(t).where(t.c.id == inst.trigger_id)).first()
    if row is None:
        return None
    live = conn.execute(
        select(func.count()).where(tg.c.stopped_at.is_(None), tg.c.heartbeat_at >= now - stale)
    ).scalar_one()
    return TriggerFact(row.id, row.classpath, row.created_at, inst.trigger_timeout,
                       row.triggerer_id, row.lease_expires_at, live)  # fmt: skip


def _sensor_facts(task: object, inst: TaskInstanceRecord) -> dict:
    """A sensor's pokes and deadline, for ``tasks why`` (issue 15)."""
    sensor = getattr(task, "sensor", None)
    if not sensor or inst.first_poke_at is None:
        return {"poke_count": inst.poke_count}
    deadline = SensorPolicy.of(sensor).deadline(inst.first_poke_at)
    return {"poke_count": inst.poke_count, "first_poke_at": inst.first_poke_at,
            "sensor_deadline": deadline}  # fmt: skip
