"""Sensors: a poke that found its condition unmet, and a sensor that gave up.

A sensor in reschedule mode ends each unmet poke with :meth:`SensorStore.record_poke`,
a write fenced like every outcome (id, try, owner, ``running``): the instance moves to
``up_for_reschedule`` with ``ready_at`` at its next poke (see
:mod:`orchestrator.scheduling.sensors`), gives up its owner and lease, and so holds no
worker slot until a worker claims it again at ``ready_at``. That claim keeps the try
number and reopens the try's row (``claims.reopen_tries``): every poke of a try appends to
the same try and the same log. Pokes never spend retries; a poke that raises is an
ordinary failed try. A sensor whose timeout (counted from the first poke of its try)
has passed, or whose condition can no longer be met, ends with :meth:`sensor_failed`:
``failed`` without retries, or ``skipped`` with ``soft_fail``.

>>> store.record_poke(claim, now)     # doctest: +SKIP
'up_for_reschedule'
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, bindparam, select, update

from orchestrator.scheduling.sensors import SensorPolicy, next_poke
from orchestrator.states import TASK_CLAIMABLE, TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.core.records import Claim
from orchestrator.store.tasks.claims import _take as take_statement
from orchestrator.store.tasks.claims import _taking
from orchestrator.store.tasks.task_store import _stale

log = logging.getLogger(__name__)
CHECK_BATCH = 64  # due built-in sensor pokes claimed per worker round beyond its slots
ti = m.task_instances
tries = m.task_tries


class SensorStore(StoreBase):
    def record_poke(
        self, claim: Claim, now: datetime, *, wake_at: datetime | None = None
    ) -> str | None:
        """An unmet poke: ``up_for_reschedule`` until the next poke, or the sensor's
        timeout (failed, or skipped with ``soft_fail``) if it has passed.

        Returns the new state, or None if the write was fenced out (a stale worker).
        ``wake_at`` brings the next poke forward (a time sensor's target time).
        """
        return self.record_pokes([(claim, now, wake_at)])[0]

    def record_pokes(
        self, items: list[tuple[Claim, datetime, datetime | None]]
    ) -> list[str | None]:
        """Several unmet pokes (``record_poke`` each) in one transaction, one commit:
        a worker's round of pokes costs one commit, like its round of successes."""
        return self.finish_round(items, [], None)[0]

    def finish_round(
        self,
        pokes: list[tuple[Claim, datetime, datetime | None]],
        successes: list[tuple[Claim, str | None, datetime]],
        claim: tuple[str, datetime, timedelta, int, list[str]] | None,
        *,
        log_pieces: Any = (),
        extras: dict[tuple[int, int], dict[str, Any]] | None = None,
    ) -> tuple[list[str | None], list[Any], list[Claim]]:
        """A worker's round in one commit: its unmet pokes (``record_pokes``), its
        successes (``finish_successes``) and, with ``claim`` (owner, now, lease, limit,
        queues), what is ready now, as ``finish_and_claim``. Returns the pokes' new
        states, the successes' ``Finished`` and the claims."""
        states: list[str | None] = []
        checks: list[Claim] = []
        take = None
        if claim is not None:
            owner, now, lease, limit, queues = claim
            take = (owner, now, now + lease, limit, queues)

        def record(conn: Connection) -> None:
            states.extend(self._poke_in(conn, c, at, wake_at) for c, at, wake_at in pokes)
            if take is not None:  # built-in sensors due now: no slot needed
                checks.extend(self._claim_checks(conn, take[0], take[1], take[2], take[4]))

        done, claims = self._finish(  # type: ignore[attr-defined]
            successes, take, log_pieces, extras, before=record
        )
        return states, done, checks + claims

    def _poke_in(
        self, conn: Connection, claim: Claim, now: datetime, wake_at: datetime | None
    ) -> str | None:
        row = conn.execute(_ROW, {"id": claim.ti_id}).first()
        if row is None:
            return None
        policy = self._policy(claim)
        if policy is None:  # not a sensor (a changed DAG file): the try fails
            return self._end(
                conn, claim, row, now, TaskState.FAILED, "not a sensor: cannot reschedule"
            )
        first = row.first_poke_at or row.start_date or now
        pokes = row.poke_count + 1
        at = next_poke(policy, first_poke=first, pokes=pokes, now=now, wake_at=wake_at)
        if at is None:
            waited = now - first
            error = (
                f"sensor timed out: its condition was not met in {_round(waited)} "
                f"({pokes} poke{'s' if pokes != 1 else ''}; timeout {policy.timeout})"
            )
            state = TaskState.SKIPPED if policy.soft_fail else TaskState.FAILED
            return self._end(conn, claim, row, now, state, error)
        params = {"b_id": claim.ti_id, "b_try": claim.try_number, "b_owner": claim.owner}
        done = conn.execute(
            _RESCHEDULE,
            params | {"b_at": at, "b_first": first, "b_pokes": pokes,
                      "b_check": getattr(self._task(claim), "check", None) is not None},
        ).rowcount  # fmt: skip
        if not done:
            _stale(conn, row, now, try_number=claim.try_number, owner=claim.owner)
            return None
        conn.execute(_CLOSE_POKE, {"b_id": claim.ti_id, "b_try": claim.try_number, "b_end": now})
        log.debug(
            "poke %s of dag_id=%s run_id=%s task_id=%s try=%s unmet: next at %s",
            pokes,
            claim.dag_id,
            claim.run_id,
            claim.task_id,
            claim.try_number,
            at.isoformat(),
        )
        return str(TaskState.UP_FOR_RESCHEDULE)

    def sensor_failed(self, claim: Claim, error: str, now: datetime) -> str | None:
        """A sensor that gave up (poke mode's timeout, an external task that failed):
        ``failed`` without further tries, or ``skipped`` if it has ``soft_fail``."""
        with self.write() as conn:
            row = conn.execute(_ROW, {"id": claim.ti_id}).first()
            if row is None:
                return None
            policy = self._policy(claim)
            soft = policy is not None and policy.soft_fail
            state = TaskState.SKIPPED if soft else TaskState.FAILED
            return self._end(conn, claim, row, now, state, error)

    def _task(self, claim: Claim) -> object:
        try:
            return self.spec(claim.dag_id, claim.version_hash).tasks.get(claim.task_id)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - an unknown version: not a sensor
            return None

    def _policy(self, claim: Claim) -> SensorPolicy | None:
        sensor = getattr(self._task(claim), "sensor", None)
        return SensorPolicy.of(sensor) if sensor else None

    def _claim_checks(
        self, conn: Connection, owner: str, now: datetime, expires: datetime, queues: list[str]
    ) -> list[Claim]:
        """Due pokes of built-in sensors (``worker_check``, set when their run is
        created), up to CHECK_BATCH, beyond the worker's free slots: the worker
        evaluates them itself and they hold none."""
        stmt = _TAKE_CHECKS_LOCKING if self.is_postgres else _TAKE_CHECKS
        rows = conn.execute(
            stmt, {"ready_by": now, "queues": queues} | _taking(owner, now, expires)
        ).all()
        if not rows:
            return []
        return self._record_claims(conn, rows, owner, now, expires)  # type: ignore[attr-defined]

    @staticmethod
    def _end(
        conn: Connection, claim: Claim, row: object, now: datetime, state: str, error: str
    ) -> str | None:
        done = conn.execute(
            update(ti)
            .where(*_fence(claim))
            .values(
                state=state, owner=None, lease_expires_at=None, end_date=now, error=error[-4000:]
            )
        ).rowcount
        if not done:
            _stale(conn, row, now, try_number=claim.try_number, owner=claim.owner)
            return None
        _close(conn, claim, "failed" if state == TaskState.FAILED else str(state), now, error)
        kind = "sensor_skipped" if state == TaskState.SKIPPED else "sensor_failed"
        record_event(
            conn,
            now,
            kind,
            f"try {claim.try_number}: {error[:500]}",
            dag_id=claim.dag_id,
            run_id=claim.run_id,
            task_id=claim.task_id,
            try_number=claim.try_number,
        )
        log.warning(
            "%s dag_id=%s run_id=%s task_id=%s try=%s: %s",
            kind,
            claim.dag_id,
            claim.run_id,
            claim.task_id,
            claim.try_number,
            error[:200],
        )
        return str(state)


def _fence(claim: Claim) -> list:
    return [
        ti.c.id == claim.ti_id,
        ti.c.try_number == claim.try_number,
        ti.c.owner == claim.owner,
        ti.c.state == TaskState.RUNNING,
    ]


def _close(conn: Connection, claim: Claim, state: str, now: datetime, error: str | None) -> None:
    conn.execute(
        update(tries)
        .where(
            and_(
                tries.c.ti_id == claim.ti_id,
                tries.c.try_number == claim.try_number,
                tries.c.state == "running",
            )
        )
        .values(state=state, end_date=now, error=error[-4000:] if error else None)
    )


def _round(delta: object) -> str:
    return str(delta).split(".")[0]


_ROW = select(
    ti.c.id,
    ti.c.dag_id,
    ti.c.run_id,
    ti.c.task_id,
    ti.c.try_number,
    ti.c.owner,
    ti.c.start_date,
    ti.c.first_poke_at,
    ti.c.poke_count,
).where(ti.c.id == bindparam("id"))


# built once: they run in every worker round while built-in sensors are about
_RESCHEDULE = (
    update(ti)
    .where(
        ti.c.id == bindparam("b_id"),
        ti.c.try_number == bindparam("b_try"),
        ti.c.owner == bindparam("b_owner"),
        ti.c.state == TaskState.RUNNING,
    )
    .values(
        state=TaskState.UP_FOR_RESCHEDULE,
        owner=None,
        lease_expires_at=None,
        ready_at=bindparam("b_at"),
        first_poke_at=bindparam("b_first"),
        poke_count=bindparam("b_pokes"),
        worker_check=bindparam("b_check"),
        error=None,
    )
)
_CLOSE_POKE = (
    update(tries)
    .where(
        tries.c.ti_id == bindparam("b_id"),
        tries.c.try_number == bindparam("b_try"),
        tries.c.state == "running",
    )
    .values(state=TaskState.UP_FOR_RESCHEDULE, end_date=bindparam("b_end"), error=None)
)
_DUE_CHECKS = (
    select(ti.c.id)
    .where(
        ti.c.worker_check.is_(True),
        ti.c.state.in_(sorted(TASK_CLAIMABLE)),
        ti.c.ready_at <= bindparam("ready_by"),
        ti.c.queue.in_(bindparam("queues", expanding=True)),
        ti.c.pool.is_(None),
    )
    .order_by(ti.c.ready_at, ti.c.id)
    .limit(CHECK_BATCH)
)
_TAKE_CHECKS = take_statement(_DUE_CHECKS)
_TAKE_CHECKS_LOCKING = take_statement(_DUE_CHECKS.with_for_update(skip_locked=True))
