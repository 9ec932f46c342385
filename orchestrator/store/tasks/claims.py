"""Claiming task instances under a lease, and the pools that cap how many run at once.

A claim is one atomic ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED)
RETURNING``, so two workers never take one attempt. Tasks in a pool are claimed only
while the pool has free slots: the claim locks the pool's row first (PostgreSQL; on
SQLite every write is serialised anyway), counts the slots its running tasks hold,
and takes no more than what is left, so a pool is never exceeded, however many
workers claim at once. Pools are locked in name order, so claims never deadlock.

>>> store.set_pool("warehouse", 3, now)                          # doctest: +SKIP
>>> store.claim("worker-1", now, timedelta(seconds=30), limit=8)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    String,
    and_,
    bindparam,
    case,
    delete,
    false,
    func,
    insert,
    literal_column,
    or_,
    select,
    tuple_,
    union_all,
    update,
)

from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.scheduling.mapping import task_sources
from orchestrator.states import TASK_CLAIMABLE, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.core.models import UTCDateTime
from orchestrator.store.core.records import Claim, Record
from orchestrator.store.tasks.concurrency import pick_gated
from orchestrator.store.tasks.task_store import (
    log_path_for,
    same_instance_results,
    upstream_results_in,
)

ti = m.task_instances
tries = m.task_tries
CLAIMABLE = list(TASK_CLAIMABLE)
POOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,250}")  # the CLI's pool_name checks the same


@dataclass(frozen=True)
class PoolRecord(Record):
    name: str
    slots: int
    used: int
    running: int
    queued: int
    description: str | None


class ClaimStore(StoreBase):
    def claim(
        self,
        owner: str,
        now: datetime,
        lease: timedelta,
        *,
        limit: int,
        queues: Iterable[str] = ("default",),
        results: bool = False,
    ) -> list[Claim]:
        """Atomically take up to ``limit`` claimable task instances under a lease.

        ``results=True`` also reads, in the same transaction, the results of each
        claimed task's upstream tasks (``Claim.upstream_results``: what the worker
        hands to ``ctx.upstream``).
        """
        if limit <= 0:
            return []
        with self.write() as conn:
            known = {} if results else None
            return self._claim_in(conn, owner, now, now + lease, limit, list(queues), known)

    def _claim_in(
        self,
        conn: Connection,
        owner: str,
        now: datetime,
        expires: datetime,
        limit: int,
        queues: list[str],
        known: dict[tuple[str, str], str | None] | None,
    ) -> list[Claim]:
        """The claim, in the caller's transaction. ``known`` (results by (run_id,
        task_id) recorded earlier in this transaction), if not None, asks for each
        claim's upstream results; those in ``known`` are not read back."""
        claimed = conn.execute(
            _TAKE_LOCKING if self.is_postgres else _TAKE,
            {"ready_by": now, "queues": queues, "limit": limit} | _taking(owner, now, expires),
        ).all()
        if len(claimed) < limit:
            claimed += self._take_pooled(conn, owner, now, expires, limit - len(claimed), queues)
        if len(claimed) < limit:  # issue 14: depends_on_past, max_active_* (concurrency.py)
            gated = pick_gated(self, conn, now, limit - len(claimed), queues)
            if gated:
                claimed += self._take(
                    conn, select(ti.c.id).where(ti.c.id.in_(gated)), owner, now, expires
                )
        if not claimed:
            return []
        out = self._record_claims(conn, claimed, owner, now, expires)
        return self._with_results(conn, out, known) if known is not None else out

    def _with_results(
        self, conn: Connection, claims: list[Claim], known: dict[tuple[str, str], str | None]
    ) -> list[Claim]:
        ups: list[tuple[str, ...]] = []
        same: dict[int, frozenset[str]] = {}  # claim's position: its group instance's ups
        for n, c in enumerate(claims):
            try:
                spec = self.spec(c.dag_id, c.version_hash)  # type: ignore[attr-defined]
                task = spec.tasks[c.task_id]
            except Exception:  # noqa: BLE001 - the worker fails the try when it dispatches
                ups.append(())
                continue
            # a mapped instance gets its item, not the whole list it was mapped over
            over = task_sources(task.mapping) if c.map_index >= 0 else ()
            if c.map_index >= 0 and spec.same_instance_upstream(c.task_id):
                same[n] = spec.same_instance_upstream(c.task_id)  # issue 25 item 7
                over = (*over, *same[n])
            ups.append(tuple(u for u in task.upstream if u not in over))
        # results recorded earlier in this transaction are not read back
        local = [all((c.run_id, u) in known for u in up) for c, up in zip(claims, ups, strict=True)]
        found = upstream_results_in(
            conn,
            [
                (c.run_id, () if mine else up)
                for c, up, mine in zip(claims, ups, local, strict=True)
            ],
        )
        out = []
        for n, (c, up, mine, read) in enumerate(zip(claims, ups, local, found, strict=True)):
            if mine:  # only non-NULL results, as read from the store
                read = {u: v for u in up if (v := known[(c.run_id, u)]) is not None}
            if n in same:  # instance i of a mapped group reads instance i's results
                read = read | same_instance_results(conn, c.run_id, same[n], c.map_index)
            out.append(replace(c, upstream_results=read))
        return out

    def _take(
        self, conn: Connection, pick: Any, owner: str, now: datetime, expires: datetime
    ) -> list:
        if self.is_postgres:
            pick = pick.with_for_update(skip_locked=True)
        return conn.execute(
            _take(pick, sqlite=not self.is_postgres), _taking(owner, now, expires)
        ).all()

    def _take_pooled(
        self,
        conn: Connection,
        owner: str,
        now: datetime,
        expires: datetime,
        limit: int,
        queues: list[str],
    ) -> list:
        q = _WAITING_POOLS if self.is_postgres else _WAITING_POOLS_SQLITE
        waiting = conn.execute(q, {"ready_by": now, "queues": queues}).scalars().all()
        taken: list = []
        for name in waiting:
            if len(taken) >= limit:
                break
            pool_q = select(m.pools.c.slots).where(m.pools.c.name == name)
            if self.is_postgres:
                pool_q = pool_q.with_for_update()  # one claimer per pool at a time
            slots = conn.execute(pool_q).scalar()
            if slots is None:
                continue  # no such pool: its tasks wait (the explainer says why)
            used = conn.execute(
                select(func.coalesce(func.sum(ti.c.pool_slots), 0)).where(
                    ti.c.pool == name, ti.c.state == TaskState.RUNNING
                )
            ).scalar_one()
            free = slots - used
            if free <= 0:
                continue
            candidates = conn.execute(
                _POOL_CANDIDATES,
                {"ready_by": now, "queues": queues, "pool": name, "limit": limit - len(taken)},
            ).all()
            chosen = []
            for c in candidates:
                if c.pool_slots <= free:
                    chosen.append(c.id)
                    free -= c.pool_slots
            if chosen:
                pick = select(ti.c.id).where(ti.c.id.in_(chosen))
                taken += self._take(conn, pick, owner, now, expires)
        return taken

    def _record_claims(
        self, conn: Connection, claimed: list, owner: str, now: datetime, expires: datetime
    ) -> list[Claim]:
        runs = {
            row.id: row
            for row in conn.execute(_RUNS_BY_PK, {"pks": sorted({c.run_pk for c in claimed})})
        }
        out = []
        for c in sorted(claimed, key=lambda c: c.id):
            run = runs[c.run_pk]
            out.append(
                Claim(
                    ti_id=c.id,
                    dag_id=run.dag_id,
                    run_id=run.run_id,
                    task_id=c.task_id,
                    try_number=c.try_number,
                    max_tries=c.max_tries,
                    owner=owner,
                    lease_expires_at=expires,
                    logical_date=run.logical_date,
                    data_interval_start=run.data_interval_start,
                    data_interval_end=run.data_interval_end,
                    conf=json.loads(run.conf or "{}"),
                    version_hash=run.version_hash,
                    log_path=log_path_for(
                        run.dag_id, run.run_id, c.task_id, c.try_number, c.map_index
                    ),
                    map_index=c.map_index,
                    map_kwargs=c.map_kwargs,
                    poke_count=c.poke_count,
                    next_method=c.next_method,
                    next_kwargs=c.next_kwargs,
                    run_type=run.run_type,
                )
            )
        reopen_tries(conn, [c for c in out if c.poke_count], owner)  # a sensor's next poke
        reopen_tries(conn, [c for c in out if c.next_method], owner, TaskState.DEFERRED)
        fresh = [c for c in out if not c.poke_count and not c.next_method]
        if not fresh:
            return out
        conn.execute(
            insert(tries),
            [
                {
                    "ti_id": c.ti_id,
                    "dag_id": c.dag_id,
                    "run_id": c.run_id,
                    "task_id": c.task_id,
                    "try_number": c.try_number,
                    "worker": owner,
                    "state": "running",
                    "start_date": now,
                    "log_path": c.log_path,
                    "map_index": c.map_index,
                }
                for c in fresh
            ],
        )
        return out

    # -- pools ---------------------------------------------------------------------------
    def set_pool(
        self,
        name: str,
        slots: int,
        now: datetime,
        description: str | None = None,
        *,
        who: str | None = None,
    ) -> None:
        """Create a pool or change its size (``orchestrator pools set NAME SLOTS``).

        A name is 1-250 letters, digits, ``_``, ``-`` or ``.``; slots fit an INTEGER.
        """
        if not isinstance(name, str) or not POOL_NAME.fullmatch(name):
            raise ConfigError(
                f"pool names are 1-250 letters, digits, '_', '-' or '.', got {name!r}"
            )
        if not isinstance(slots, int) or not 0 <= slots <= 2**31 - 1:
            raise ConfigError(
                f"pool {name!r}: slots must be a whole number from 0 to {2**31 - 1}, got {slots!r}"
            )
        p = m.pools
        with self.write() as conn:
            done = conn.execute(
                update(p).where(p.c.name == name).values(slots=slots, updated_at=now)
            ).rowcount
            if not done:
                conn.execute(
                    insert(p).values(
                        name=name, slots=slots, description=description, updated_at=now
                    )
                )
            record_event(conn, now, "pool_set", f"pool {name} has {slots} slot(s)", actor=who)

    def delete_pool(self, name: str, now: datetime, *, who: str | None = None) -> None:
        with self.write() as conn:
            if not conn.execute(delete(m.pools).where(m.pools.c.name == name)).rowcount:
                raise NotFoundError(f"no pool named {name!r}")
            record_event(
                conn, now, "pool_deleted", f"pool {name} deleted: its tasks wait", actor=who
            )

    def pools(self) -> list[PoolRecord]:
        """Every pool with the slots its running tasks hold, and tasks waiting for it."""
        with self.read() as conn:
            rows = conn.execute(select(m.pools).order_by(m.pools.c.name)).all()
            usage = {
                r.pool: r
                for r in conn.execute(
                    select(
                        ti.c.pool,
                        func.sum(ti.c.pool_slots).label("used"),
                        func.count().label("running"),
                    )
                    .where(ti.c.pool.is_not(None), ti.c.state == TaskState.RUNNING)
                    .group_by(ti.c.pool)
                )
            }
            queued = dict(
                conn.execute(
                    select(ti.c.pool, func.count())
                    .where(ti.c.pool.is_not(None), ti.c.state.in_(CLAIMABLE))
                    .group_by(ti.c.pool)
                ).all()
            )
        return [
            PoolRecord(
                name=r.name,
                slots=r.slots,
                used=int(usage[r.name].used) if r.name in usage else 0,
                running=usage[r.name].running if r.name in usage else 0,
                queued=queued.get(r.name, 0),
                description=r.description,
            )
            for r in rows
        ]


# built once: a claim runs in every worker round (building and keying a statement costs
# more Python than SQLite takes to run it)
def _take(pick: Any, *, sqlite: bool = False) -> Any:
    """Take the task instances ``pick`` selects: running, under this owner's lease.

    On SQLite the state check is written ``+state`` so the planner finds the picked
    rows by primary key instead of walking every claimable row for them."""
    state = literal_column("+task_instances.state", String) if sqlite else ti.c.state
    return (
        update(ti)
        .where(ti.c.id.in_(pick.scalar_subquery()), state.in_(CLAIMABLE))
        .values(
            state=TaskState.RUNNING,
            owner=bindparam("b_owner"),
            # a sensor's next poke keeps its try (and its poke count and first poke); so
            # does a deferred try its trigger resumed (issue 30: queued with next_method)
            try_number=case((_KEEP_TRY, ti.c.try_number), else_=ti.c.try_number + 1),
            poke_count=case((_REPOKE, ti.c.poke_count), else_=0),
            first_poke_at=case((_REPOKE, ti.c.first_poke_at), else_=None),
            lease_expires_at=bindparam("b_expires"),
            start_date=bindparam("b_now"),
            end_date=None,
            # a retry starts over from the task itself, as in Airflow
            next_method=case((_RESUME, ti.c.next_method), else_=None),
            next_kwargs=case((_RESUME, ti.c.next_kwargs), else_=None),
        )
        .returning(
            ti.c.id,
            ti.c.run_pk,
            ti.c.try_number,
            ti.c.max_tries,
            ti.c.task_id,
            ti.c.map_index,
            ti.c.map_kwargs,
            ti.c.poke_count,
            ti.c.next_method,
            ti.c.next_kwargs,
        )
    )


_REPOKE = ti.c.state == TaskState.UP_FOR_RESCHEDULE
_RESUME = and_(ti.c.state == TaskState.QUEUED, ti.c.next_method.is_not(None))
_KEEP_TRY = or_(_REPOKE, _RESUME)


def _taking(owner: str, now: datetime, expires: datetime) -> dict[str, Any]:
    return {"b_owner": owner, "b_now": now, "b_expires": expires}


# claimable now, in these queues (bound: ready_by, queues)
_CLAIMABLE_NOW = (
    ti.c.state.in_(CLAIMABLE),
    ti.c.ready_at <= bindparam("ready_by"),
    ti.c.queue.in_(bindparam("queues", expanding=True)),
    ti.c.gated == false(),  # gated instances: store/tasks/concurrency.py (issue 14)
)
# higher priority_weight first, then the oldest ready (issue 14)
_CLAIM_ORDER = (ti.c.priority_weight.desc(), ti.c.ready_at, ti.c.id)
_UNPOOLED = (
    select(ti.c.id)
    .where(*_CLAIMABLE_NOW, ti.c.pool.is_(None))
    .order_by(*_CLAIM_ORDER)
    .limit(bindparam("limit"))
)


def _unpooled_by_state() -> Any:
    """``_UNPOOLED`` for SQLite: each claimable state read along the claim-order index
    (``ix_task_instances_claim_order``), stopping at its first ``limit`` rows, then the
    best ``limit`` of those. A single ``state IN (...)`` query sorts every claimable row
    instead (with 10,000 queued instances, most of a worker round). ``+ready_at`` keeps
    the planner off the (state, ready_at) index, whose order is not the claim's."""
    ready = literal_column("+task_instances.ready_at", UTCDateTime)
    branches = [
        select(ti.c.id, ti.c.priority_weight, ti.c.ready_at)
        .where(
            ti.c.state == state,
            ready <= bindparam("ready_by"),
            *_CLAIMABLE_NOW[2:],
            ti.c.pool.is_(None),
        )
        .order_by(*_CLAIM_ORDER)
        .limit(bindparam("limit"))
        .subquery()
        for state in CLAIMABLE
    ]
    best = union_all(*(select(b) for b in branches)).subquery()
    return (
        select(best.c.id)
        .order_by(best.c.priority_weight.desc(), best.c.ready_at, best.c.id)
        .limit(bindparam("limit"))
    )


_TAKE = _take(_unpooled_by_state(), sqlite=True)  # SQLite
_TAKE_LOCKING = _take(_UNPOOLED.with_for_update(skip_locked=True))  # PostgreSQL
_WAITING_POOLS = (
    select(ti.c.pool).where(*_CLAIMABLE_NOW, ti.c.pool.is_not(None)).distinct().order_by(ti.c.pool)
)
# SQLite: ``+state`` keeps the planner off the (state, ready_at) index, which walks every
# claimable row, unpooled ones too; it reads the partial index of pooled rows instead
_WAITING_POOLS_SQLITE = (
    select(ti.c.pool)
    .where(
        literal_column("+task_instances.state", String).in_(CLAIMABLE),
        *_CLAIMABLE_NOW[1:],
        ti.c.pool.is_not(None),
    )
    .distinct()
    .order_by(ti.c.pool)
)
_POOL_CANDIDATES = (
    select(ti.c.id, ti.c.pool_slots)
    .where(*_CLAIMABLE_NOW, ti.c.pool == bindparam("pool"))
    .order_by(*_CLAIM_ORDER)
    .limit(bindparam("limit"))
)
_RUNS_BY_PK = select(m.dag_runs).where(m.dag_runs.c.id.in_(bindparam("pks", expanding=True)))


# issue 15: a claim that is a sensor's next poke reopens its try
def reopen_tries(
    conn: Connection, claims: list[Claim], owner: str, was: str = TaskState.UP_FOR_RESCHEDULE
) -> None:
    """A rescheduled sensor claimed for its next poke (or, issue 30, a deferred try
    resumed, ``was='deferred'``): its try's row is running again (same try number, same
    log; its start stays the first poke's)."""
    if not claims:
        return
    conn.execute(
        _REOPEN,
        {
            "ids": sorted(c.ti_id for c in claims),
            "pairs": sorted((c.ti_id, c.try_number) for c in claims),
            "worker": owner,
            "was": str(was),
        },
    )


_REOPEN = (
    update(tries)
    .where(
        tries.c.ti_id.in_(bindparam("ids", expanding=True)),  # by key on SQLite (finish.py)
        tuple_(tries.c.ti_id, tries.c.try_number).in_(bindparam("pairs", expanding=True)),
        tries.c.state == bindparam("was"),
    )
    .values(state="running", worker=bindparam("worker"), end_date=None)
)
