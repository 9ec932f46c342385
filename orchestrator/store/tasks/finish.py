"""Recording successful tries, and releasing what they unblock in the same transaction.

A success is a write fenced on (id, try_number, owner, state='running'). In the same
transaction, with the run's row locked first (``FOR UPDATE`` on PostgreSQL, the
writer lock on SQLite; run before task instances, as every transition does), the
finished task's direct downstream tasks that are now certainly releasable move
``scheduled -> queued`` set-based, and a run left with nothing open is finished (and
the queued runs it makes room for started). The scheduler's ``release_ready`` /
``finish_runs`` stay the general path (every trigger rule, skips, failures); this fast
path only takes decisions those would take identically (see
:mod:`orchestrator.store.tasks.release` and :mod:`orchestrator.store.runs.run_progress`), so a
worker needs no scheduler round trip between a task and its downstream.

>>> store.finish_success(claim, '{"rows": 3}', now)            # doctest: +SKIP
True
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, select, tuple_, update

from orchestrator.authoring.spec import DagSpec
from orchestrator.states import RunState, TaskState
from orchestrator.store.assets.asset_store import record_outlet_events
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.core.records import Claim
from orchestrator.store.observe.log_store import insert_pieces
from orchestrator.store.tasks.release import release_after_success
from orchestrator.store.tasks.task_store import _stale

log = logging.getLogger(__name__)
ti = m.task_instances
tries = m.task_tries


@dataclass(frozen=True)
class Finished:
    """What one recorded success did. ``recorded`` is False if it was fenced out."""

    recorded: bool
    released: int = 0  # downstream tasks queued in the same transaction
    needs_scheduler: bool = False  # something is left that only the scheduler decides


class FinishStore(StoreBase):
    def finish_success(
        self,
        claim: Claim,
        result: str | None,
        now: datetime,
    ) -> bool:
        """Record a successful try. False (and a loud log line) if the lease was lost.

        A branch task's result names the direct downstream tasks to follow; the others
        are skipped in the same transaction (compare-and-set on ``scheduled``), and
        release_ready then propagates the skips by trigger rule. A branch result that
        names no direct downstream task fails the try instead.
        """
        return self.finish_successes([(claim, result, now)])[0].recorded

    def finish_successes(
        self,
        items: list[tuple[Claim, str | None, datetime]],
        extras: dict[tuple[int, int], dict[str, Any]] | None = None,
        *,
        log_pieces: Sequence = (),
    ) -> list[Finished]:
        """Record several successful tries in one transaction (one commit), in order.

        Each is fenced on its own: a stale one changes nothing and is logged, the
        others are recorded. All or none are committed. The statements do not grow
        with the batch: one fenced UPDATE ... RETURNING (and one for the tries) per
        distinct result, and each run's downstream tasks decided once, after all of
        its successes are in. ``log_pieces`` (``log_store.LogPiece``) are the ends of the
        tries' logs, shipped in the same commit.
        """
        return self._finish(items, None, log_pieces, extras)[0]

    def finish_and_claim(
        self,
        items: list[tuple[Claim, str | None, datetime]],
        owner: str,
        now: datetime,
        lease: timedelta,
        *,
        limit: int,
        queues: Iterable[str] = ("default",),
        log_pieces: Sequence = (),
        extras: dict[tuple[int, int], dict[str, Any]] | None = None,
    ) -> tuple[list[Finished], list[Claim]]:
        """``finish_successes``, then ``claim(..., results=True)`` in the same transaction.

        A worker's round (record what finished, take what is ready, including what
        those successes just released) costs one commit instead of two.
        """
        return self._finish(
            items, (owner, now, now + lease, limit, list(queues)), log_pieces, extras
        )

    def _finish(
        self,
        items: list[tuple[Claim, str | None, datetime]],
        claim: tuple[str, datetime, datetime, int, list[str]] | None,
        log_pieces: Sequence = (),
        extras: dict[tuple[int, int], dict[str, Any]] | None = None,
        before: Callable[[Connection], None] | None = None,
    ) -> tuple[list[Finished], list[Claim]]:
        out, prepared = self._prepare(items)
        claims: list[Claim] = []
        if prepared or claim or log_pieces or before:
            with self.write() as conn:
                if before is not None:  # e.g. a round's unmet pokes (store/tasks/sensor_store.py)
                    before(conn)
                if log_pieces:  # the tries' logs, in the commit of their outcomes
                    # a round of pokes only (no success, no claim) ships at the wall clock's now
                    at = claim[1] if claim else items[-1][2] if items else datetime.now(UTC)
                    insert_pieces(conn, log_pieces, at)
                # results just recorded are not read back for the tasks they released
                known = self._record(conn, prepared, out, extras) if prepared else {}
                if claim and claim[3] > 0:
                    claims = self._claim_in(conn, *claim, known)  # type: ignore[attr-defined]
        return [o if o is not None else Finished(recorded=False) for o in out], claims

    def _prepare(
        self, items: list[tuple[Claim, str | None, datetime]]
    ) -> tuple[list[Finished | None], list[_Prepared]]:
        """Look up each success's DAG version; a branch result naming no direct
        downstream task fails its try here instead (its own transaction)."""
        out: list[Finished | None] = [None] * len(items)
        prepared: list[_Prepared] = []
        for i, (claim, result, now) in enumerate(items):
            spec = self.spec(claim.dag_id, claim.version_hash)  # type: ignore[attr-defined]
            task = spec.tasks.get(claim.task_id)
            skip: list[str] | None = None
            if task is not None and task.branch:
                try:
                    chosen = spec.branch_targets(claim.task_id, result)
                except ValueError as exc:
                    self.finish_failure(claim, str(exc), None, now)  # type: ignore[attr-defined]
                    out[i] = Finished(recorded=False, needs_scheduler=True)
                    continue
                skip = [d for d in spec.downstream[claim.task_id] if d not in chosen]
            prepared.append(_Prepared(i, claim, result, now, spec, skip))
        return out, prepared

    def _record(
        self,
        conn: Connection,
        prepared: list[_Prepared],
        out: list[Finished | None],
        extras: dict[tuple[int, int], dict[str, Any]] | None = None,
    ) -> dict[tuple[str, str], str | None]:
        """Record the held successes (see ``finish_successes``); their results by
        (run_id, task_id)."""
        runs = self._lock_runs_of(conn, {p.claim.run_id for p in prepared})
        held = self._write_successes(conn, prepared)
        recorded = []
        for p in prepared:
            if (p.claim.ti_id, p.claim.try_number) in held:
                recorded.append(p)
            else:
                _stale(conn, p.claim, p.now)
                out[p.index] = Finished(recorded=False)
        by_run: dict[str, list[_Prepared]] = {}
        for p in recorded:
            by_run.setdefault(p.claim.run_id, []).append(p)
        for run_id, group in by_run.items():
            done = self._after_successes(conn, runs.get(run_id), group)
            for p, finished in zip(group, done, strict=True):
                out[p.index] = finished
        self._advance_runs(conn, runs, by_run, out)
        # issue 15: the outlets' asset events, only for the successes written (fenced)
        emitted = record_outlet_events(
            conn, [(p.claim, p.spec.tasks[p.claim.task_id].outlets, p.now) for p in recorded
                   if p.claim.task_id in p.spec.tasks], extras)  # fmt: skip
        for p in recorded:  # an event may start a consumer's run: the scheduler decides
            if p.claim.ti_id in emitted and (done := out[p.index]) is not None:
                out[p.index] = replace(done, needs_scheduler=True)
        # a mapped instance's result is one item of its task's list: read back instead
        return {
            (p.claim.run_id, p.claim.task_id): p.result for p in recorded if p.claim.map_index < 0
        }

    def _advance_runs(
        self,
        conn: Connection,
        runs: dict[str, object],
        by_run: dict[str, list[_Prepared]],
        out: list[Finished | None],
    ) -> None:
        """A leaf's success may complete its run: finish it here and start the queued
        runs it makes room for (root tasks queued), as the scheduler would, so a
        catch-up goes from run to run without a scheduler round trip per run."""
        leaf_runs = []
        for run_id, group in by_run.items():
            run = runs.get(run_id)
            if (
                run is not None
                and run.state == RunState.RUNNING  # type: ignore[attr-defined]
                and run.is_paused is False  # type: ignore[attr-defined]
                and any(not p.spec.downstream[p.claim.task_id] for p in group)
            ):
                leaf_runs.append(run.id)  # type: ignore[attr-defined]
        if not leaf_runs:
            return
        last = max((p for group in by_run.values() for p in group), key=lambda p: p.index)
        advanced = self.advance_runs_locked(conn, leaf_runs, last.now)  # type: ignore[attr-defined]
        told = out[last.index]
        assert told is not None
        out[last.index] = Finished(
            recorded=True,
            released=told.released + advanced.started.tasks_queued,
            needs_scheduler=told.needs_scheduler or advanced.needs_scheduler,
        )

    @staticmethod
    def _write_successes(conn: Connection, prepared: list[_Prepared]) -> set[tuple[int, int]]:
        """Write the successes whose lease is still theirs (running, same try, same
        owner): one fenced UPDATE ... RETURNING, and one for their tries, per distinct
        (result, end time), which for a batch of no-op tasks is one of each. Returns the
        (ti_id, try_number) written; the others were fenced out."""
        groups: dict[tuple[str | None, datetime], list[Claim]] = {}
        for p in prepared:
            groups.setdefault((p.result, p.now), []).append(p.claim)
        held: set[tuple[int, int]] = set()
        for (result, now), claims in groups.items():
            keys = sorted((c.ti_id, c.try_number, c.owner) for c in claims)
            written = conn.execute(
                _SUCCESS,
                {"ids": [k[0] for k in keys], "keys": keys, "end": now, "b_result": result},
            ).all()
            if not written:
                continue
            pairs = sorted((row.id, row.try_number) for row in written)
            conn.execute(_CLOSE_TRIES, {"ids": [p[0] for p in pairs], "pairs": pairs, "end": now})
            held.update(pairs)
        return held

    def _after_successes(
        self, conn: Connection, run: object, group: list[_Prepared]
    ) -> list[Finished]:
        """Branch skips, then the run's downstream tasks released once for the group."""
        if run is None:  # cannot happen while the task instances exist
            return [Finished(recorded=True, needs_scheduler=True) for _ in group]
        needs = [False] * len(group)
        for k, p in enumerate(group):
            if p.skip is not None:
                self._skip_branches(conn, run, p)
                needs[k] = bool(p.skip)  # skips propagate: the scheduler's job
        active = run.state == RunState.RUNNING and run.is_paused is False  # type: ignore[attr-defined]
        if not active:
            return [Finished(recorded=True, needs_scheduler=True) for _ in group]
        released, more = release_after_success(
            conn,
            group[0].spec,
            run.id,  # type: ignore[attr-defined]
            [p.claim.task_id for p in group],
            group[-1].now,
            self.max_map_length,  # type: ignore[attr-defined]
        )
        out = [Finished(recorded=True, needs_scheduler=n) for n in needs]
        # the group's releases and what is left to the scheduler, told once
        out[-1] = Finished(recorded=True, released=released, needs_scheduler=needs[-1] or more)
        return out

    @staticmethod
    def _skip_branches(conn: Connection, run: object, p: _Prepared) -> None:
        claim = p.claim
        skipped = (
            conn.execute(
                update(ti)
                .where(
                    ti.c.run_pk == run.id,  # type: ignore[attr-defined]
                    ti.c.task_id.in_(p.skip or []),
                    ti.c.state == TaskState.SCHEDULED,
                )
                .values(state=TaskState.SKIPPED, end_date=p.now)
                .returning(ti.c.task_id)
            )
            .scalars()
            .all()
        )
        followed = [d for d in p.spec.downstream[claim.task_id] if d not in (p.skip or [])]
        record_event(
            conn,
            p.now,
            "branch_followed",
            f"followed {', '.join(followed) or 'nothing'}; "
            f"skipped {', '.join(sorted(skipped)) or 'nothing'}",
            dag_id=claim.dag_id,
            run_id=claim.run_id,
            task_id=claim.task_id,
            try_number=claim.try_number,
        )

    def _lock_runs_of(self, conn: Connection, run_ids: set[str]) -> dict[str, object]:
        """Lock the runs (id order) and read what the fast path needs about them.

        On PostgreSQL the rows come back locked, in id order, and as they are under
        the lock (on SQLite the write transaction's lock already serialises writers).
        """
        q = _LOCK_RUNS if self.is_postgres else _READ_RUNS
        rows = conn.execute(q, {"run_ids": sorted(run_ids)})
        return {row.run_id: row for row in rows}


@dataclass(frozen=True)
class _Prepared:
    index: int  # position in the caller's batch
    claim: Claim
    result: str | None
    now: datetime
    spec: DagSpec
    skip: list[str] | None  # a branch task's direct downstream tasks not followed


# built once: these run in every worker round (building and keying a statement costs
# more Python than SQLite takes to run it)
_READ_RUNS = (
    select(m.dag_runs.c.id, m.dag_runs.c.run_id, m.dag_runs.c.dag_id, m.dag_runs.c.state,
           m.dags.c.is_paused)
    .join(m.dags, m.dags.c.dag_id == m.dag_runs.c.dag_id, isouter=True)
    .where(m.dag_runs.c.run_id.in_(bindparam("run_ids", expanding=True)))
    .order_by(m.dag_runs.c.id)
)  # fmt: skip
_LOCK_RUNS = _READ_RUNS.with_for_update(of=m.dag_runs)
# the id lists let SQLite find the rows by key: it reads a row-value IN (VALUES ...) by
# walking the table (task_tries) or an index of every running instance
_SUCCESS = (
    update(ti)
    .where(
        ti.c.id.in_(bindparam("ids", expanding=True)),
        tuple_(ti.c.id, ti.c.try_number, ti.c.owner).in_(bindparam("keys", expanding=True)),
        ti.c.state == TaskState.RUNNING,
    )
    .values(
        state=TaskState.SUCCESS, end_date=bindparam("end"), result=bindparam("b_result"), error=None
    )
    .returning(ti.c.id, ti.c.try_number)
)
_CLOSE_TRIES = (
    update(tries)
    .where(
        tries.c.ti_id.in_(bindparam("ids", expanding=True)),
        tuple_(tries.c.ti_id, tries.c.try_number).in_(bindparam("pairs", expanding=True)),
        tries.c.state == "running",
    )
    .values(state="success", end_date=bindparam("end"), exit_status=0, error=None)
)
