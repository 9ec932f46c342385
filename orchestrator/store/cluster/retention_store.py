"""History retention: delete finished runs older than a cutoff, in batches.

Only runs in a finished state are touched, re-checked inside the deleting
transaction (rows locked on PostgreSQL, the writer lock on SQLite), so a run cleared
back to running at the same moment is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import and_, delete, func, or_, select

from orchestrator.states import RUN_FINISHED
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase

r, ti, tries, ev = m.dag_runs, m.task_instances, m.task_tries, m.events


@dataclass
class CleanResult:
    runs: int = 0
    task_instances: int = 0
    tries: int = 0
    events: int = 0
    alerts: int = 0
    log_chunks: int = 0  # pieces of shipped try logs (issue 17)
    log_paths: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"runs": self.runs, "task_instances": self.task_instances, "tries": self.tries,
                "events": self.events, "alerts": self.alerts, "log_files": len(self.log_paths),
                "log_chunks": self.log_chunks}  # fmt: skip


def _old_run(cutoff: datetime):  # noqa: ANN202
    return and_(
        r.c.state.in_(list(RUN_FINISHED)), func.coalesce(r.c.end_date, r.c.created_at) < cutoff
    )


class RetentionStore(StoreBase):
    def count_history(self, cutoff: datetime) -> CleanResult:
        """What :meth:`clean_history` would delete (``--dry-run``)."""
        old = select(r.c.id).where(_old_run(cutoff)).scalar_subquery()
        old_ids = select(r.c.run_id).where(_old_run(cutoff)).scalar_subquery()
        with self.read() as conn:
            n = lambda q: conn.execute(q).scalar() or 0  # noqa: E731
            paths = conn.execute(
                select(tries.c.log_path).join(ti, ti.c.id == tries.c.ti_id)
                .where(ti.c.run_pk.in_(old), tries.c.log_path.is_not(None))
            ).scalars().all()  # fmt: skip
            return CleanResult(
                runs=n(select(func.count()).where(_old_run(cutoff))),
                task_instances=n(select(func.count()).select_from(ti).where(ti.c.run_pk.in_(old))),
                tries=len(paths),
                log_chunks=n(select(func.count()).select_from(m.log_chunks).where(
                    m.log_chunks.c.ti_id.in_(select(ti.c.id).where(ti.c.run_pk.in_(old))))),
                events=n(select(func.count()).select_from(ev).where(_old_events(cutoff, old_ids))),
                alerts=n(select(func.count()).select_from(m.alerts)
                         .where(m.alerts.c.created_at < cutoff)),
                log_paths=list(paths),
            )  # fmt: skip

    def clean_history(self, cutoff: datetime, *, batch: int = 500) -> CleanResult:
        """Delete one batch of old finished runs with their task instances, tries and
        events (plus old run-less events and alerts once no runs are left). Call until
        ``runs`` is 0. The caller deletes the returned log files."""
        out = CleanResult()
        with self.write() as conn:
            pick = select(r.c.id, r.c.run_id).where(_old_run(cutoff)).order_by(r.c.id).limit(batch)
            if self.is_postgres:
                pick = pick.with_for_update(skip_locked=True)
            runs = conn.execute(pick).all()
            pks, run_ids = [x.id for x in runs], [x.run_id for x in runs]
            if pks:
                ti_ids = select(ti.c.id).where(ti.c.run_pk.in_(pks)).scalar_subquery()
                out.log_paths = list(conn.execute(
                    select(tries.c.log_path).where(tries.c.ti_id.in_(ti_ids),
                                                   tries.c.log_path.is_not(None))
                ).scalars())  # fmt: skip
                out.tries = conn.execute(delete(tries).where(tries.c.ti_id.in_(ti_ids))).rowcount
                conn.execute(delete(m.task_xcoms).where(m.task_xcoms.c.ti_id.in_(ti_ids)))
                out.log_chunks = conn.execute(
                    delete(m.log_chunks).where(m.log_chunks.c.ti_id.in_(ti_ids))
                ).rowcount
                out.task_instances = conn.execute(delete(ti).where(ti.c.run_pk.in_(pks))).rowcount
                out.events = conn.execute(delete(ev).where(ev.c.run_id.in_(run_ids))).rowcount
                out.alerts = conn.execute(
                    delete(m.alerts).where(m.alerts.c.run_id.in_(run_ids))
                ).rowcount
                out.runs = conn.execute(
                    delete(r).where(r.c.id.in_(pks), r.c.state.in_(list(RUN_FINISHED)))
                ).rowcount
            else:  # the runs are done: old events and alerts of no run go too
                out.events = conn.execute(
                    delete(ev).where(ev.c.at < cutoff, ev.c.run_id.is_(None))
                ).rowcount
                out.alerts = conn.execute(
                    delete(m.alerts).where(m.alerts.c.created_at < cutoff)
                ).rowcount
        return out


def _old_events(cutoff: datetime, old_run_ids):  # noqa: ANN001, ANN202
    return or_(ev.c.run_id.in_(old_run_ids), and_(ev.c.at < cutoff, ev.c.run_id.is_(None)))
