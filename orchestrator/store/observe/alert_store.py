"""Alerts: raised once per event (a unique key), delivered under a short lease.

The watchdog (:mod:`orchestrator.observability.alerts.watchdog`) decides what to raise; this module
only records it and hands deliveries to the delivery loop, one compare-and-set at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from orchestrator.states import RunState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import EventRecord, Record, RunRecord

a, dl = m.alerts, m.alert_deliveries
WATERMARK_EVENTS = ("dag_added", "dag_unpaused", "schedule_changed", "dag_reactivated")
DECISION_EVENTS = ("fire_skipped", "fire_coalesced", "fire_expired")


@dataclass(frozen=True)
class AlertRecord(Record):
    id: int
    key: str
    kind: str
    dag_id: str | None
    run_id: str | None
    task_id: str | None
    try_number: int | None
    logical_date: datetime | None
    message: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> AlertRecord:
        return cls(*(getattr(row, c) for c in cls.__dataclass_fields__))

    def payload(self) -> dict[str, Any]:
        """The documented JSON body of a webhook (docs/observability.md)."""
        return {"version": 1, "alert_id": self.id, **self.to_dict()}


@dataclass(frozen=True)
class Delivery(Record):
    id: int
    notifier: str
    target: dict[str, Any]
    attempts: int
    state: str
    last_error: str | None
    alert: AlertRecord


class AlertStore(StoreBase):
    def raise_alert(
        self,
        key: str,
        kind: str,
        message: str,
        now: datetime,
        *,
        notifiers: list[dict[str, Any]],
        dag_id: str | None = None,
        run_id: str | None = None,
        task_id: str | None = None,
        try_number: int | None = None,
        logical_date: datetime | None = None,
    ) -> AlertRecord | None:
        """Record an alert and its deliveries; None if this event was alerted already."""
        values = dict(key=key, kind=kind, dag_id=dag_id, run_id=run_id, task_id=task_id,
                      try_number=try_number, logical_date=logical_date, message=message,
                      created_at=now)  # fmt: skip
        with self.write() as conn:
            if conn.execute(select(a.c.id).where(a.c.key == key)).first():
                return None
            try:
                with conn.begin_nested():
                    pk = conn.execute(insert(a).values(**values).returning(a.c.id)).scalar_one()
            except IntegrityError:  # another watchdog raised it first
                return None
            if notifiers:
                conn.execute(
                    insert(dl),
                    [
                        {"alert_id": pk, "notifier": n["kind"], "target": json.dumps(n),
                         "state": "pending", "attempts": 0, "next_attempt_at": now}
                        for n in notifiers
                    ],
                )  # fmt: skip
        return AlertRecord(id=pk, **values)

    def list_alerts(
        self, *, dag_id: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[AlertRecord]:
        q = select(a).order_by(a.c.id.desc()).limit(limit)
        if dag_id:
            q = q.where(a.c.dag_id == dag_id)
        if kind:
            q = q.where(a.c.kind == kind)
        with self.read() as conn:
            return [AlertRecord.from_row(r) for r in conn.execute(q)]

    def alert_counts(self) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
        """(alerts by kind, deliveries by (notifier, state))."""
        with self.read() as conn:
            kinds = dict(conn.execute(select(a.c.kind, func.count()).group_by(a.c.kind)).all())
            rows = conn.execute(
                select(dl.c.notifier, dl.c.state, func.count()).group_by(dl.c.notifier, dl.c.state)
            ).all()
        return kinds, {(r[0], r[1]): r[2] for r in rows}

    def deliveries(self, alert_id: int) -> list[dict[str, Any]]:
        with self.read() as conn:
            rows = conn.execute(select(dl).where(dl.c.alert_id == alert_id).order_by(dl.c.id))
            return [dict(r._mapping) for r in rows]

    # -- the delivery loop ---------------------------------------------------------------
    def claim_deliveries(self, now: datetime, lease: timedelta, limit: int = 20) -> list[Delivery]:
        """Take due deliveries under a lease, so two delivery loops never send one twice."""
        due = and_(
            dl.c.state == "pending",
            dl.c.next_attempt_at <= now,
            or_(dl.c.lease_until.is_(None), dl.c.lease_until < now),
        )
        with self.read() as conn:
            ids = conn.execute(
                select(dl.c.id).where(due).order_by(dl.c.next_attempt_at, dl.c.id).limit(limit)
            ).scalars().all()  # fmt: skip
        out = []
        for pk in ids:
            with self.write() as conn:
                taken = conn.execute(
                    update(dl).where(dl.c.id == pk, due).values(lease_until=now + lease)
                ).rowcount
                if not taken:
                    continue
                row = conn.execute(
                    select(dl, a).join(a, a.c.id == dl.c.alert_id).where(dl.c.id == pk)
                ).first()
            alert = AlertRecord(
                row.alert_id, row.key, row.kind, row.dag_id, row.run_id, row.task_id,
                row.try_number, row.logical_date, row.message, row.created_at,
            )  # fmt: skip
            out.append(Delivery(pk, row.notifier, json.loads(row.target), row.attempts,
                                row.state, row.last_error, alert))  # fmt: skip
        return out

    def delivery_done(
        self, delivery_id: int, now: datetime, *, error: str | None = None,
        retry_at: datetime | None = None,
    ) -> bool:  # fmt: skip
        """Close an attempt: delivered (no error), pending again (retry_at) or failed."""
        if error is None:
            values: dict[str, Any] = {"state": "delivered", "delivered_at": now}
        elif retry_at is not None:
            values = {"state": "pending", "next_attempt_at": retry_at}
        else:
            values = {"state": "failed"}
        values.update(attempts=dl.c.attempts + 1, lease_until=None, last_error=error)
        with self.write() as conn:
            return bool(
                conn.execute(
                    update(dl)
                    .where(dl.c.id == delivery_id, dl.c.state == "pending")
                    .values(**values)
                ).rowcount
            )

    # -- what the watchdog reads ---------------------------------------------------------
    def alert_cursor(self, name: str) -> int:
        with self.read() as conn:
            value = conn.execute(
                select(m.alert_cursors.c.last_event_id).where(m.alert_cursors.c.name == name)
            ).scalar()
            start = conn.execute(select(func.coalesce(func.max(m.events.c.id), 0))).scalar()
        if value is None:  # start from now: history before the first watchdog is not alerted
            self.advance_alert_cursor(name, -1, int(start))
            return self.alert_cursor(name)
        return int(value)

    def advance_alert_cursor(self, name: str, old: int, new: int) -> bool:
        c = m.alert_cursors
        with self.write() as conn:
            if conn.execute(select(c.c.name).where(c.c.name == name)).first() is None:
                try:
                    with conn.begin_nested():
                        conn.execute(insert(c).values(name=name, last_event_id=new))
                    return True
                except IntegrityError:
                    return False
            return bool(
                conn.execute(
                    update(c).where(c.c.name == name, c.c.last_event_id == old)
                    .values(last_event_id=new)
                ).rowcount
            )  # fmt: skip

    def events_after(self, event_id: int, limit: int = 500) -> list[EventRecord]:
        e = m.events
        with self.read() as conn:
            rows = conn.execute(select(e).where(e.c.id > event_id).order_by(e.c.id).limit(limit))
            return [EventRecord(r.id, r.at, r.kind, r.dag_id, r.run_id, r.task_id,
                                r.try_number, r.message, actor=r.actor,
                                map_index=r.map_index) for r in rows]  # fmt: skip

    def previous_finished_states(self, run: RunRecord, limit: int = 1) -> list[str]:
        """States of the DAG's finished runs before ``run`` (by logical date), newest first."""
        r = m.dag_runs
        with self.read() as conn:
            return list(
                conn.execute(
                    select(r.c.state)
                    .where(r.c.dag_id == run.dag_id, r.c.id != run.id,
                           r.c.logical_date < run.logical_date,
                           r.c.state.in_([RunState.SUCCESS, RunState.FAILED]))
                    .order_by(r.c.logical_date.desc()).limit(limit)
                ).scalars()
            )  # fmt: skip

    def schedule_watermark(self, dag_id: str) -> datetime | None:
        """Since when the DAG has been scheduled as it is now (added, unpaused, changed)."""
        e = m.events
        with self.read() as conn:
            created = conn.execute(select(m.dags.c.created_at).where(m.dags.c.dag_id == dag_id))
            created = created.scalar()
            last = conn.execute(
                select(func.max(e.c.at)).where(e.c.dag_id == dag_id,
                                               e.c.kind.in_(WATERMARK_EVENTS))
            ).scalar()  # fmt: skip
        return max((t for t in (created, last) if t is not None), default=None)

    def fire_accounted(self, dag_id: str, fire: datetime) -> bool:
        """A run exists for ``fire``, or a misfire decision was recorded after it was due."""
        r, e = m.dag_runs, m.events
        with self.read() as conn:
            run = conn.execute(
                select(r.c.id).where(r.c.dag_id == dag_id, r.c.logical_date == fire).limit(1)
            ).first()
            if run is not None:
                return True
            decided = conn.execute(
                select(e.c.id).where(e.c.dag_id == dag_id, e.c.kind.in_(DECISION_EVENTS),
                                     e.c.at >= fire).limit(1)
            ).first()  # fmt: skip
        return decided is not None

    def runs_due_by(self, dag_id: str, lo: datetime, hi: datetime) -> list[RunRecord]:
        """Scheduled and manual runs with lo < logical_date <= hi."""
        r = m.dag_runs
        q = select(r).where(r.c.dag_id == dag_id, r.c.logical_date > lo, r.c.logical_date <= hi,
                            r.c.run_type.in_(["scheduled", "manual"]))  # fmt: skip
        with self.read() as conn:
            return [RunRecord.from_row(row) for row in conn.execute(q.order_by(r.c.id))]

    def shared_fire_times(self, since: datetime) -> list[tuple[str, datetime, str]]:
        """(dag_id, logical_date, run_id) of scheduled/backfill runs sharing a fire time."""
        r = m.dag_runs
        kinds = r.c.run_type.in_(["scheduled", "backfill"])
        # "dag_id IN (every DAG)" lets the planner range-scan (dag_id, logical_date) once
        # per DAG from ``since``, instead of walking every run ever stored in index order
        # (DAG rows are never deleted, so no run is left out)
        dup = (
            select(r.c.dag_id, r.c.logical_date)
            .where(r.c.dag_id.in_(select(m.dags.c.dag_id)), kinds, r.c.logical_date >= since)
            .group_by(r.c.dag_id, r.c.logical_date)
            .having(func.count() > 1)
            .subquery()
        )
        q = select(r.c.dag_id, r.c.logical_date, r.c.run_id).join(
            dup, and_(dup.c.dag_id == r.c.dag_id, dup.c.logical_date == r.c.logical_date)
        ).where(kinds)  # fmt: skip
        with self.read() as conn:
            return [tuple(row) for row in conn.execute(q)]  # type: ignore[misc]
