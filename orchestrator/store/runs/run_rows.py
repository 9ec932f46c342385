"""Run rows: the run id and the one INSERT path of runs and their task instances.

Every way a run is created (scheduled, manual, backfill) goes through
:func:`insert_runs`, so invariant 1 (one run per fire time) is kept in one place.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime

from sqlalchemy import Connection, insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from orchestrator.authoring.spec import DagSpec
from orchestrator.authoring.task_controls import is_gated
from orchestrator.states import RunState, TaskState
from orchestrator.store.core import models as m

log = logging.getLogger(__name__)
_TI_BATCH = 5000  # task instances per INSERT when creating many runs at once


def make_run_id(dag_id: str, run_type: str, logical_date: datetime) -> str:
    # the year zero-padded by hand: strftime's %Y gives "1", not "0001", on glibc
    stamp = f"{logical_date.year:04d}" + logical_date.strftime("%m%dT%H%M%S")
    if logical_date.microsecond:
        stamp += f".{logical_date.microsecond:06d}"
    return f"{dag_id}__{run_type}__{stamp}Z"


def insert_runs(
    conn: Connection,
    spec: DagSpec,
    version_hash: str,
    *,
    run_type: str,
    fire_times: list[tuple[datetime, tuple[datetime, datetime]]],
    conf: dict,
    now: datetime,
    backfill_id: int | None = None,
    triggered_by: str | None = None,
    run_id: str | None = None,
    trigger_depth: int = 0,
) -> dict[datetime, int]:
    """Insert runs (state queued) and their task instances; {logical_date: run pk} of
    those created.

    A run that exists already is left alone and missing from the answer: scheduled and
    backfill runs are unique per (dag_id, logical_date) (a partial unique index:
    invariant 1), every run per run_id, and ``INSERT ... ON CONFLICT DO NOTHING``
    skips a conflicting row on either index, so a manual run for a fire time never
    blocks or displaces the scheduled run of that time. One multi-row INSERT each for
    the runs, their task instances and their ``run_created`` events; ``triggered_by``
    (who asked: ``cli:USER@HOST``, ``web:USER``, ...) is stored on the runs and named in
    the events.
    """
    return insert_runs_of(
        conn,
        [(spec, version_hash, fire_times)],
        run_type=run_type,
        conf=conf,
        now=now,
        backfill_id=backfill_id,
        triggered_by=triggered_by,
        run_id=run_id,
        trigger_depth=trigger_depth,
    )[0]


RunGroup = tuple[DagSpec, str, list[tuple[datetime, tuple[datetime, datetime]]]]


def insert_runs_of(
    conn: Connection,
    groups: list[RunGroup],
    *,
    run_type: str,
    conf: dict,
    now: datetime,
    backfill_id: int | None = None,
    triggered_by: str | None = None,
    run_id: str | None = None,
    trigger_depth: int = 0,
) -> list[dict[datetime, int]]:
    """:func:`insert_runs` for several DAGs at once: each group is (spec, version hash,
    fire times); one {logical_date: run pk} per group, in order. Still one INSERT each
    for all the groups' runs, task instances and events (issue 29: a minute's runs of
    thousands of DAGs in a few statements)."""
    out: list[dict[datetime, int]] = [{} for _ in groups]
    r = m.dag_runs
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    rows, group_of = [], {}
    for g, (spec, version_hash, fire_times) in enumerate(groups):
        for logical_date, interval in fire_times:
            rid = run_id or make_run_id(spec.dag_id, run_type, logical_date)
            group_of[rid] = g
            rows.append(
                {
                    # ``run_id``: a one-run insert's own id (a run triggered by a task, issue 15)
                    "run_id": rid,
                    "dag_id": spec.dag_id,
                    "version_hash": version_hash,
                    "run_type": run_type,
                    "logical_date": logical_date,
                    "data_interval_start": interval[0],
                    "data_interval_end": interval[1],
                    "state": RunState.QUEUED,
                    "conf": json.dumps(conf),
                    "created_at": now,
                    "backfill_id": backfill_id,
                    "triggered_by": triggered_by,
                    "trigger_depth": trigger_depth,
                }
            )
    if not rows:
        return out
    stmt = dialect_insert(r).on_conflict_do_nothing().returning(r.c.id, r.c.run_id)
    created = dict(conn.execute(stmt, rows).all())  # run pk -> run_id
    by_run_id = {row["run_id"]: row["logical_date"] for row in rows}
    new = set(created.values())
    for row in rows:
        if row["run_id"] not in new:
            log.info(
                "run of dag_id=%s at %s exists already",
                row["dag_id"],
                row["logical_date"].isoformat(),
            )
    if not created:
        return out
    order = sorted(created, key=lambda pk: (group_of[created[pk]], by_run_id[created[pk]], pk))
    batch: list[dict] = []  # bounded memory for big DAGs: at most about _TI_BATCH rows
    for pk in order:
        spec = groups[group_of[created[pk]]][0]
        batch += [
            {
                "run_pk": pk,
                "dag_id": spec.dag_id,
                "run_id": created[pk],
                "task_id": t.task_id,
                "state": TaskState.SCHEDULED,
                "try_number": 0,
                "max_tries": t.max_tries,
                "queue": t.queue,
                "pool": t.pool,
                "pool_slots": t.pool_slots,
                # issue 14: claim order and claim-time checks
                "priority_weight": t.priority_weight,
                "gated": is_gated(t, spec.max_active_tasks),
                "worker_check": t.check is not None,  # a built-in sensor (issue 15)
            }
            for t in spec.tasks.values()
        ]
        if len(batch) >= _TI_BATCH:
            conn.execute(insert(m.task_instances), batch)
            batch = []
    if batch:
        conn.execute(insert(m.task_instances), batch)
    by_whom = f" by {triggered_by}" if triggered_by else ""
    conn.execute(
        insert(m.events),
        [
            {
                "at": now,
                "kind": "run_created",
                "message": (
                    f"{run_type} run for {by_run_id[created[pk]].isoformat()} created{by_whom}"
                ),
                "dag_id": groups[group_of[created[pk]]][0].dag_id,
                "run_id": created[pk],
                "task_id": None,
                "try_number": None,
                "actor": triggered_by[:250] if triggered_by else None,
            }
            for pk in order
        ],
    )
    for pk in order:
        out[group_of[created[pk]]][by_run_id[created[pk]]] = pk
    return out


def insert_run(
    conn: Connection,
    spec: DagSpec,
    version_hash: str,
    *,
    run_type: str,
    logical_date: datetime,
    interval: tuple[datetime, datetime],
    conf: dict,
    now: datetime,
    backfill_id: int | None = None,
    triggered_by: str | None = None,
    run_id: str | None = None,
    trigger_depth: int = 0,
) -> int | None:
    """Insert one run and its task instances; None if the run already exists
    (see :func:`insert_runs`)."""
    created = insert_runs(
        conn,
        spec,
        version_hash,
        run_type=run_type,
        fire_times=[(logical_date, interval)],
        conf=conf,
        now=now,
        backfill_id=backfill_id,
        triggered_by=triggered_by,
        run_id=run_id,
        trigger_depth=trigger_depth,
    )
    return created.get(logical_date)
