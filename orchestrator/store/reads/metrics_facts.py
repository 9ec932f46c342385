"""What ``/metrics`` reads at scrape time (``observability/metrics.py`` shapes it for
Prometheus): states counted, queue depth, import errors, the leader lease, live
workers, and the release and upstream latencies of the tries started lately.

Nothing is counted in the hot path: a scrape is a handful of grouped queries in one
read transaction, the same from every process and across restarts.

>>> store.metrics_facts(now, timedelta(hours=1)).queue_depth  # doctest: +SKIP
{'default': 12}
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, select

from orchestrator.states import TASK_CLAIMABLE
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import Record

LATENCY_ROWS = 5000  # the latest tries started in the window that the histograms sample


@dataclass(frozen=True)
class LeaseFact:
    holder: str
    epoch: int
    expires_at: datetime


@dataclass(frozen=True)
class MetricsFacts(Record):
    """The store's facts at one scrape."""

    task_instances: dict[str, int]  # by state
    dag_runs: dict[str, int]  # by state
    tries: tuple[tuple[str, str | None, int], ...]  # (state, lost_reason, count)
    queue_depth: dict[str, int]  # claimable and due, by queue
    import_errors: int
    lease: LeaseFact | None
    workers_live: int  # heartbeated within the last minute and not stopped
    release_to_start: tuple[float, ...]  # seconds from queued (or retry due) to claimed
    upstream_to_start: tuple[float, ...]  # seconds from the last upstream's end to start


class MetricsFactsStore(StoreBase):
    def metrics_facts(self, now: datetime, window: timedelta) -> MetricsFacts:
        """Every fact ``/metrics`` shows at ``now``; latencies of tries started within
        ``window`` (at most :data:`LATENCY_ROWS` of them, the latest)."""
        ti, r, tries, w = m.task_instances, m.dag_runs, m.task_tries, m.workers
        with self.read() as conn:
            ti_states = conn.execute(select(ti.c.state, func.count()).group_by(ti.c.state)).all()
            run_states = conn.execute(select(r.c.state, func.count()).group_by(r.c.state)).all()
            try_states = conn.execute(
                select(tries.c.state, tries.c.lost_reason, func.count())
                .group_by(tries.c.state, tries.c.lost_reason)
            ).all()  # fmt: skip
            depth = conn.execute(
                select(ti.c.queue, func.count())
                .where(ti.c.state.in_(list(TASK_CLAIMABLE)), ti.c.ready_at <= now)
                .group_by(ti.c.queue)
            ).all()
            errors = conn.execute(select(func.count()).select_from(m.import_errors)).scalar()
            lease = conn.execute(select(m.scheduler_lease)).first()
            live = conn.execute(
                select(func.count()).select_from(w)
                .where(w.c.stopped_at.is_(None), w.c.heartbeat_at >= now - timedelta(minutes=1))
            ).scalar()  # fmt: skip
            released, after_upstream = self._latencies(conn, now - window)
        return MetricsFacts(
            task_instances=dict(ti_states),
            dag_runs=dict(run_states),
            tries=tuple((state, reason, n) for state, reason, n in try_states),
            queue_depth=dict(depth),
            import_errors=errors or 0,
            lease=LeaseFact(lease.holder, lease.epoch, lease.expires_at) if lease else None,
            workers_live=live or 0,
            release_to_start=tuple(released),
            upstream_to_start=tuple(after_upstream),
        )

    def _latencies(self, conn: Connection, since: datetime) -> tuple[list[float], list[float]]:
        ti = m.task_instances
        rows = conn.execute(
            select(ti.c.run_pk, ti.c.task_id, ti.c.ready_at, ti.c.start_date, ti.c.dag_id)
            .where(ti.c.start_date >= since, ti.c.ready_at.is_not(None))
            .order_by(ti.c.start_date.desc()).limit(LATENCY_ROWS)
        ).all()  # fmt: skip
        released = [max((x.start_date - x.ready_at).total_seconds(), 0.0) for x in rows]
        run_pks = sorted({x.run_pk for x in rows})
        ends: dict[tuple[int, str], datetime] = {}
        versions: dict[int, tuple[str, str]] = {}
        for chunk in (run_pks[i : i + 500] for i in range(0, len(run_pks), 500)):
            for row in conn.execute(
                select(ti.c.run_pk, ti.c.task_id, ti.c.end_date)
                .where(ti.c.run_pk.in_(chunk), ti.c.end_date.is_not(None))
            ):  # fmt: skip
                ends[(row.run_pk, row.task_id)] = row.end_date
            for row in conn.execute(
                select(m.dag_runs.c.id, m.dag_runs.c.dag_id, m.dag_runs.c.version_hash)
                .where(m.dag_runs.c.id.in_(chunk))
            ):  # fmt: skip
                versions[row.id] = (row.dag_id, row.version_hash)
        after = []
        for x in rows:
            try:
                spec = self.spec(*versions[x.run_pk])  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - a missing version only drops a sample
                continue
            task = spec.tasks.get(x.task_id)
            up_ends = [ends.get((x.run_pk, u)) for u in (task.upstream if task else ())]
            if up_ends and all(up_ends):
                after.append(max((x.start_date - max(up_ends)).total_seconds(), 0.0))
        return released, after
