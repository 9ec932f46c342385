"""Task instances: heartbeat, failures (fenced), reap, clear.

Claims live in claims.py, successes in finish.py, releases in release.py.

Every write after a claim is fenced on (id, try_number, owner, state='running'):
a worker that lost its lease changes nothing, and that is logged loudly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import Connection, and_, bindparam, func, or_, select, tuple_, update

from orchestrator.errors import NotFoundError
from orchestrator.states import FAILED_NOW, SKIPPED_TRY, TASK_FINISHED, RunState, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, lock_runs, record_event
from orchestrator.store.core.records import Claim, TaskInstanceRecord, TryRecord
from orchestrator.store.tasks.expansion import collapse_locked
from orchestrator.store.tasks.xcoms import delete_xcoms_of

log = logging.getLogger(__name__)
ti = m.task_instances
tries = m.task_tries
LOST = "lost"  # the state of a try lost to infrastructure (its reason: task_tries.lost_reason)
LEASE_EXPIRED = "lease_expired"  # reasons a try is lost
HANDED_BACK = "handed_back"


def log_path_for(
    dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1
) -> str:
    """Where a try's log lives, relative to the log folder (a mapped instance's in a
    ``map_index=N`` folder of its task's, as Airflow)."""
    if map_index >= 0:
        return f"{dag_id}/{run_id}/{task_id}/map_index={map_index}/{try_number}.log"
    return f"{dag_id}/{run_id}/{task_id}/{try_number}.log"


def idempotency_key(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """Stable across retries; a mapped instance's includes its map index."""
    if map_index >= 0:
        return f"{dag_id}/{run_id}/{task_id}/{map_index}"
    return f"{dag_id}/{run_id}/{task_id}"


class TaskStore(StoreBase):
    # -- scheduler side (release_ready: release.py) -------------------------------------
    def reap_expired(self, now: datetime) -> list[tuple[str, str, int, str]]:
        """Expired leases are tries lost to infrastructure: retry each, or dead-letter it.

        A lost try is queued again at once without spending the task's retries, up to
        its ``max_lost_tries``; a loss beyond that counts as a failed try (see
        ``_fail_attempt``). Returns (run_id, task_id, try_number, new_state) for each
        reaped attempt.
        """
        with self.read() as conn:
            rows = conn.execute(
                select(ti, m.dag_runs.c.version_hash)
                .join(m.dag_runs, m.dag_runs.c.id == ti.c.run_pk)
                .where(ti.c.state == TaskState.RUNNING, ti.c.lease_expires_at < now)
                .order_by(ti.c.id)
            ).all()
        out = []
        for row in rows:
            error = (
                f"lease expired at {row.lease_expires_at.isoformat()}: worker {row.owner} "
                "stopped heartbeating (killed, hung or cut off)"
            )
            state = self._fail_attempt(
                row.id,
                row.try_number,
                row.owner,
                error,
                None,
                now,
                try_state=LOST,
                extra=ti.c.lease_expires_at < now,
                quiet=True,
                lost=LEASE_EXPIRED,
            )
            if state is not None:
                out.append((row.run_id, row.task_id, row.try_number, state))
        return out

    def lost_tries_bound(self, task: object) -> int:
        """How many lost tries of ``task`` (a TaskSpec, or None) do not count as failures."""
        own = getattr(task, "max_lost_tries", None)
        return self.max_lost_tries if own is None else own  # type: ignore[attr-defined]

    # -- worker side ---------------------------------------------------------------------
    def heartbeat(
        self, owner: str, held: Iterable[tuple[int, int]], now: datetime, lease: timedelta
    ) -> set[tuple[int, int]]:
        """Extend every lease ``owner`` still holds, in one statement.

        ``held`` is (ti_id, try_number) pairs. Returns the pairs still held; the
        caller must stop the others at once. The worker's own heartbeat (``workers``,
        for status and the explainer) is recorded in the same transaction.
        """
        held = set(held)
        with self.write() as conn:
            conn.execute(
                update(m.workers).where(m.workers.c.worker_id == owner).values(heartbeat_at=now)
            )
            if not held:
                return set()
            rows = conn.execute(
                update(ti)
                .where(
                    ti.c.id.in_(sorted(i for i, _ in held)),  # by key on SQLite (finish.py)
                    tuple_(ti.c.id, ti.c.try_number).in_(sorted(held)),
                    ti.c.owner == owner,
                    ti.c.state == TaskState.RUNNING,
                    ti.c.lease_expires_at >= now,
                )
                .values(lease_expires_at=now + lease)
                .returning(ti.c.id, ti.c.try_number)
            ).all()
        kept = {(r.id, r.try_number) for r in rows} & held
        for lost in sorted(held - kept):
            log.warning("lease lost: ti=%s try=%s owner=%s", lost[0], lost[1], owner)
        return kept

    def finish_failure(
        self,
        claim: Claim,
        error: str,
        exit_status: int | None,
        now: datetime,
        *,
        try_state: str = "failed",
    ) -> str | None:
        """Record a failed try: up_for_retry with backoff, or failed (dead-lettered).

        Returns the new state, or None if the write was fenced out. ``try_state``
        ``skipped`` / ``failed_now`` are outcomes the task chose (issue 14, see
        store/tasks/task_outcomes.py): a skip, and a failure with no retry.
        """
        if try_state == SKIPPED_TRY:
            return self.finish_skip(claim, error, exit_status, now)  # type: ignore[attr-defined]
        retry = try_state != FAILED_NOW
        return self._fail_attempt(
            claim.ti_id,
            claim.try_number,
            claim.owner,
            error,
            exit_status,
            now,
            try_state="failed" if not retry else try_state,
            retry=retry,
        )

    def _fail_attempt(
        self,
        ti_id: int,
        try_number: int,
        owner: str | None,
        error: str,
        exit_status: int | None,
        now: datetime,
        *,
        try_state: str,
        extra: object = None,
        quiet: bool = False,
        lost: str | None = None,
        retry: bool = True,
        from_state: str = TaskState.RUNNING,
    ) -> str | None:
        """Close a running attempt as failed: retry it with backoff or dead-letter it.

        A compare-and-set on (id, try, owner, state='running'); None if it changed
        nothing. A reaper that loses the race (the worker heartbeated or finished in
        time, or another scheduler reaped first) is normal and stays ``quiet``; a worker
        reporting after losing its lease is a stale write and is recorded loudly.

        ``lost`` (a reason, e.g. ``lease_expired``) says the try was lost to
        infrastructure, not failed by the task: while the task has lost fewer than its
        ``max_lost_tries`` tries, it is queued again at once and ``max_tries`` grows by
        one, so its retries are untouched. A loss beyond that counts as a failed try
        (``lost N times: ...``), retried or dead-lettered per the retry policy.
        ``from_state='deferred'`` (issue 30, owner None): a deferred try whose trigger
        failed or timed out.
        """
        with self.write() as conn:
            row = conn.execute(
                select(ti, m.dag_runs.c.version_hash)
                .join(m.dag_runs, m.dag_runs.c.id == ti.c.run_pk)
                .where(ti.c.id == ti_id)
            ).first()
            if row is None:
                return None
            spec = self.spec(row.dag_id, row.version_hash)  # type: ignore[attr-defined]
            task = spec.tasks.get(row.task_id)
            # a retry (or a lost try's rerun) starts over from the task itself (issue 30)
            values: dict = {"error": error[-4000:], "end_date": now} | _NO_DEFERRAL
            bound = self.lost_tries_bound(task)
            free = lost is not None and row.lost_tries < bound
            if lost is not None:
                values["lost_tries"] = ti.c.lost_tries + 1
            if free:  # not held against the task: queued again at once, max_tries + 1
                values.update(
                    state=TaskState.QUEUED,
                    owner=None,
                    lease_expires_at=None,
                    ready_at=now,
                    end_date=None,
                    max_tries=ti.c.max_tries + 1,
                )
            else:
                if lost is not None:
                    n = row.lost_tries + 1
                    error = f"lost {n} time{'s' if n != 1 else ''}: {error}"
                    values["error"] = error[-4000:]
                retry = retry and try_number < row.max_tries  # a Fail: no retry (issue 14)
                if retry and task is not None:
                    # the backoff counts the task's own failures, not the free lost tries
                    failed = try_number - min(row.lost_tries, bound)
                    delay = task.retry_policy.delay_after(
                        failed,
                        idempotency_key(row.dag_id, row.run_id, row.task_id, row.map_index),
                    )
                    values.update(state=TaskState.UP_FOR_RETRY, ready_at=now + delay)
                else:
                    values.update(state=TaskState.FAILED)
            conds = [
                ti.c.id == ti_id,
                ti.c.try_number == try_number,
                ti.c.state == from_state,
                ti.c.owner == owner if owner is not None else ti.c.owner.is_(None),
            ]
            if extra is not None:
                conds.append(extra)
            done = conn.execute(update(ti).where(and_(*conds)).values(**values)).rowcount
            if not done:
                if not quiet:
                    _stale(conn, row, now, try_number=try_number, owner=owner)
                return None
            _close_try(
                conn, ti_id, try_number, try_state, now, exit_status, error, lost=lost,
                was="running" if from_state == TaskState.RUNNING else str(from_state),
            )  # fmt: skip
            state = values["state"]
            if free:
                kind = "task_lost"
                message = (
                    f"try {try_number} lost ({lost}), {row.lost_tries + 1} of {bound} lost "
                    f"tries not counted against retries: {error[:500]}; queued again"
                )
            elif state == TaskState.UP_FOR_RETRY:
                kind = "task_retry"
                message = (
                    f"try {try_number} of {row.max_tries} {try_state}: {error[:500]}; "
                    f"retry at {values['ready_at'].isoformat()}"
                )
            else:
                kind = "task_dead_lettered"
                message = (
                    f"try {try_number} of {row.max_tries} {try_state}, no tries left: {error[:500]}"
                )
            record_event(
                conn,
                now,
                kind,
                message,
                dag_id=row.dag_id,
                run_id=row.run_id,
                task_id=row.task_id,
                try_number=try_number,
                map_index=row.map_index,
            )
            log.warning(
                "%s dag_id=%s run_id=%s task_id=%s try=%s: %s",
                kind,
                row.dag_id,
                row.run_id,
                row.task_id,
                try_number,
                error[:200],
            )
            return str(state)

    def clear_task(
        self,
        run_id: str,
        task_id: str,
        now: datetime,
        *,
        downstream: bool = False,
        who: str | None = None,
        map_index: int | None = None,
    ) -> list[str]:
        """Reset a finished task (and optionally its downstream) so it runs again;
        ``who`` asked (the event's actor).

        ``map_index`` clears only that instance of a mapped task (its downstream tasks,
        if asked, wholly). A mapped task cleared wholly is expanded again when it is
        released next (store/tasks/expansion.py): its sources may give a new length.
        As in Airflow (issue 25), a task's relevant setups and their teardowns are
        cleared with it, and a setup's teardowns with the setup
        (``scheduling/setup_teardown.py``'s ``clear_targets``).
        """
        run = self.get_run(run_id)  # type: ignore[attr-defined]
        spec = self.spec(run.dag_id, run.version_hash)  # type: ignore[attr-defined]
        if task_id not in spec.tasks:
            raise NotFoundError(f"run {run_id!r} has no task {task_id!r}")
        if map_index is not None:
            self.task_instance(run_id, task_id, map_index)  # NotFoundError names it
        targets = spec.setup_teardown.clear_targets(task_id, downstream)
        # issue 25 item 7: in a mapped task group, one instance's downstream tasks of the
        # group are cleared at that instance only
        group = spec.mapped_group_of(task_id) if map_index is not None else None
        with self.write() as conn:
            lock_runs(conn, [run.id], self.is_postgres)  # before any TI: no deadlock
            cleared = []
            for t in targets:
                where = [ti.c.run_pk == run.id, ti.c.task_id == t]
                alone = map_index is not None and (
                    t == task_id or (group is not None and spec.mapped_group_of(t) == group)
                )
                if alone:
                    where.append(ti.c.map_index == map_index)
                done = conn.execute(
                    update(ti)
                    .where(*where, ti.c.state.in_(list(TASK_FINISHED)))
                    .values(
                        state=TaskState.SCHEDULED,
                        owner=None,
                        lease_expires_at=None,
                        ready_at=None,
                        end_date=None,
                        error=None,
                        result=None,
                        max_tries=ti.c.try_number + spec.tasks[t].max_tries,
                        lost_tries=0,  # a fresh set of tries, lost ones included
                        **_NO_DEFERRAL,
                    )
                ).rowcount
                if done:  # issue 25: the values its tries pushed go with them
                    delete_xcoms_of(conn, select(ti.c.id).where(*where))
                    cleared.append(f"{t}[{map_index}]" if alone else t)
                    if spec.tasks[t].mapped and not alone:
                        collapse_locked(conn, run.id, t)
            if cleared:
                conn.execute(
                    update(m.dag_runs)
                    .where(m.dag_runs.c.id == run.id)
                    .values(state=RunState.RUNNING, end_date=None)
                )
                record_event(
                    conn,
                    now,
                    "task_cleared",
                    f"cleared {', '.join(cleared)}" + (f" by {who}" if who else ""),
                    dag_id=run.dag_id,
                    run_id=run_id,
                    task_id=task_id,
                    actor=who,
                )
        return cleared

    def task_instances(self, run_id: str) -> list[TaskInstanceRecord]:
        with self.read() as conn:
            rows = conn.execute(select(ti).where(ti.c.run_id == run_id).order_by(ti.c.id)).all()
        return [TaskInstanceRecord.from_row(r) for r in rows]

    def task_instance(
        self, run_id: str, task_id: str, map_index: int | None = None
    ) -> TaskInstanceRecord:
        """One task instance; ``map_index`` None: the task's only (or first) instance."""
        q = select(ti).where(ti.c.run_id == run_id, ti.c.task_id == task_id)
        if map_index is not None:
            q = q.where(ti.c.map_index == map_index)
        with self.read() as conn:
            row = conn.execute(q.order_by(ti.c.map_index).limit(1)).first()
            if row is None and map_index is not None:
                count = conn.execute(
                    select(func.count()).where(ti.c.run_id == run_id, ti.c.task_id == task_id)
                ).scalar_one()
                if count:
                    raise NotFoundError(
                        f"task {task_id!r} of run {run_id!r} has no map index {map_index} "
                        f"({_indexes(count)})"
                    )
        if row is None:
            raise NotFoundError(f"run {run_id!r} has no task {task_id!r}")
        return TaskInstanceRecord.from_row(row)

    def tries(
        self, run_id: str, task_id: str | None = None, map_index: int | None = None
    ) -> list[TryRecord]:
        """A task's tries, oldest first (``map_index``: of that instance only); every
        try of the run without ``task_id``."""
        q = select(tries).where(tries.c.run_id == run_id)
        if task_id is not None:
            q = q.where(tries.c.task_id == task_id)
        if map_index is not None:
            q = q.where(tries.c.map_index == map_index)
        with self.read() as conn:
            rows = conn.execute(q.order_by(tries.c.map_index, tries.c.try_number)).all()
        return [TryRecord.from_row(r) for r in rows]

    def results(self, run_id: str, task_ids: Iterable[str]) -> dict[str, str | None]:
        """The JSON results of finished tasks of a run, by task id (a mapped task's:
        one JSON list of its successful instances' results, in map order)."""
        ids = list(task_ids)
        if not ids:
            return {}
        with self.read() as conn:
            rows = conn.execute(
                select(ti.c.task_id, ti.c.result, ti.c.map_index)
                .where(
                    ti.c.run_id == run_id, ti.c.task_id.in_(ids), ti.c.state == TaskState.SUCCESS
                )
                .order_by(ti.c.task_id, ti.c.map_index)
            ).all()
        out: dict[str, str | None] = {}
        mapped: dict[str, list[str]] = {}
        for r in rows:
            if r.map_index >= 0:
                mapped.setdefault(r.task_id, []).append(r.result or "null")
            else:
                out[r.task_id] = r.result
        out.update({t: "[" + ",".join(v) + "]" for t, v in mapped.items()})
        return out

    def instance_results(self, run_id: str) -> dict[tuple[str, int], str | None]:
        """The JSON result of every successful task instance of a run, by (task id, map
        index): ``dags test``'s table (issue 25)."""
        with self.read() as conn:
            rows = conn.execute(
                select(ti.c.task_id, ti.c.map_index, ti.c.result).where(
                    ti.c.run_id == run_id, ti.c.state == TaskState.SUCCESS
                )
            ).all()
        return {(r.task_id, r.map_index): r.result for r in rows}

    def upstream_results(self, wanted: list[tuple[str, Iterable[str]]]) -> list[dict[str, str]]:
        """For each (run_id, upstream task ids): what ``ctx.upstream`` can return there."""
        with self.read() as conn:
            return upstream_results_in(conn, wanted)


def upstream_results_in(conn, wanted: list[tuple[str, Iterable[str]]]) -> list[dict[str, str]]:
    """For each (run_id, upstream task ids): what ``ctx.upstream`` can return there.

    Only non-NULL results are fetched (a NULL result reads as None anyway), one query
    per run for a whole claimed batch; a large fan-in is read as the run's non-NULL
    results (usually few) instead of a query naming every upstream task. A mapped
    task's results (its successful instances', NULL ones included) come as one JSON
    list in map order.
    """
    asked = [(run_id, set(ids)) for run_id, ids in wanted]
    per_run: dict[str, set[str]] = {}
    for run_id, ids in asked:
        per_run.setdefault(run_id, set()).update(ids)
    found: dict[str, dict[str, str]] = {}
    for run_id, ids in per_run.items():
        if not ids:
            continue
        params = {"run_id": run_id}
        if len(ids) <= 64:
            rows = conn.execute(_RESULTS_OF, params | {"task_ids": sorted(ids)})
        else:
            rows = conn.execute(_RESULTS_OF_RUN, params)
        plain: dict[str, str] = {}
        mapped: dict[str, list[tuple[int, str | None]]] = {}
        for r in rows:
            if r.map_index >= 0:
                mapped.setdefault(r.task_id, []).append((r.map_index, r.result))
            elif r.result is not None:
                plain[r.task_id] = r.result
        for task_id, items in mapped.items():
            items.sort()
            plain[task_id] = "[" + ",".join("null" if v is None else v for _, v in items) + "]"
        found[run_id] = plain
    return [{t: v for t, v in found.get(run_id, {}).items() if t in ids} for run_id, ids in asked]


def same_instance_results(
    conn: Connection, run_id: str, task_ids: Iterable[str], map_index: int
) -> dict[str, str]:
    """The non-NULL results of instance ``map_index`` of ``task_ids`` (tasks of one
    mapped task group, issue 25 item 7) in run ``run_id``."""
    rows = conn.execute(
        _SAME_INSTANCE,
        {"run_id": run_id, "task_ids": sorted(task_ids), "map_index": map_index},
    )
    return {r.task_id: r.result for r in rows}


_SAME_INSTANCE = select(ti.c.task_id, ti.c.result).where(
    ti.c.run_id == bindparam("run_id"),
    ti.c.task_id.in_(bindparam("task_ids", expanding=True)),
    ti.c.map_index == bindparam("map_index"),
    ti.c.state == TaskState.SUCCESS,
    ti.c.result.is_not(None),
)
_RESULTS_OF_RUN = select(ti.c.task_id, ti.c.result, ti.c.map_index).where(
    ti.c.run_id == bindparam("run_id"),
    ti.c.state == TaskState.SUCCESS,
    or_(ti.c.result.is_not(None), ti.c.map_index >= 0),
)
_RESULTS_OF = _RESULTS_OF_RUN.where(ti.c.task_id.in_(bindparam("task_ids", expanding=True)))


def _indexes(count: int) -> str:
    return "it is not mapped" if count == 1 else f"its map indexes are 0..{count - 1}"


# issue 30: an instance that is not (or no longer) deferred or resuming
_NO_DEFERRAL = {"trigger_id": None, "trigger_timeout": None, "next_method": None,
                "next_kwargs": None}  # fmt: skip


def _fence(claim: Claim) -> list:
    return [
        ti.c.id == claim.ti_id,
        ti.c.try_number == claim.try_number,
        ti.c.owner == claim.owner,
        ti.c.state == TaskState.RUNNING,
    ]


def _stale(
    conn, row, now: datetime, *, try_number: int | None = None, owner: str | None = None
) -> None:
    try_number = try_number if try_number is not None else row.try_number
    owner = owner if owner is not None else row.owner
    log.error(
        "stale write rejected: dag_id=%s run_id=%s task_id=%s try=%s owner=%s no longer holds the lease",
        row.dag_id,
        row.run_id,
        row.task_id,
        try_number,
        owner,
    )
    record_event(
        conn,
        now,
        "stale_write_rejected",
        f"worker {owner} reported try {try_number} after losing its lease; ignored",
        dag_id=row.dag_id,
        run_id=row.run_id,
        task_id=row.task_id,
        try_number=try_number,
    )


def _close_try(
    conn,
    ti_id: int,
    try_number: int,
    state: str,
    now: datetime,
    exit_status: int | None,
    error: str | None,
    *,
    lost: str | None = None,
    was: str = "running",
) -> None:
    conn.execute(
        update(tries)
        .where(tries.c.ti_id == ti_id, tries.c.try_number == try_number, tries.c.state == was)
        .values(
            state=state,
            end_date=now,
            exit_status=exit_status,
            error=error[-4000:] if error else None,
            lost_reason=lost,
        )
    )
