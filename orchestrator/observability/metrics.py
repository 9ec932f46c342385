"""Prometheus metrics, computed from the store at scrape time.

Nothing is counted in the hot path: the store already holds every fact (states,
tries, timestamps), so a scrape reads them with a handful of grouped queries. That
keeps the scheduler and workers free of metrics code, makes every process's view the
same (no per-process counters to add up), and survives restarts. Latency histograms
cover tries started in the last ``window`` (default 1 hour); see docs/observability.md.

>>> text = render(store, clock.now())          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from sqlalchemy import func, select

from orchestrator.states import TASK_CLAIMABLE, RunState, TaskState
from orchestrator.store.core import models as m

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
TRY_OUTCOMES = {"success": "succeeded", "failed": "failed", "timeout": "failed",
                "crashed": "failed", "lost": "lost"}  # fmt: skip
LOST_REASONS = ("lease_expired", "handed_back")  # a try's lost_reason; before 0008, its state
LATENCY_ROWS = 5000


def histogram(name: str, doc: str, values: list[float]) -> HistogramMetricFamily:
    counts, cumulative = [], 0
    for bound in BUCKETS:
        cumulative = sum(1 for v in values if v <= bound)
        counts.append((str(bound), cumulative))
    counts.append(("+Inf", len(values)))
    return HistogramMetricFamily(name, doc, buckets=counts, sum_value=sum(values))


class StoreCollector:
    """A prometheus_client collector reading the store on each ``collect()``."""

    def __init__(self, store: Any, now: datetime, window: timedelta = timedelta(hours=1)):
        self.store, self.now, self.window = store, now, window

    def collect(self) -> Iterator[Metric]:
        ti, r, tries = m.task_instances, m.dag_runs, m.task_tries
        with self.store.read() as conn:
            ti_states = conn.execute(select(ti.c.state, func.count()).group_by(ti.c.state)).all()
            run_states = conn.execute(select(r.c.state, func.count()).group_by(r.c.state)).all()
            try_states = conn.execute(
                select(tries.c.state, tries.c.lost_reason, func.count())
                .group_by(tries.c.state, tries.c.lost_reason)
            ).all()  # fmt: skip
            depth = conn.execute(
                select(ti.c.queue, func.count())
                .where(ti.c.state.in_(list(TASK_CLAIMABLE)), ti.c.ready_at <= self.now)
                .group_by(ti.c.queue)
            ).all()
            errors = conn.execute(select(func.count()).select_from(m.import_errors)).scalar()
            lease = conn.execute(select(m.scheduler_lease)).first()
            live = conn.execute(
                select(func.count()).select_from(m.workers)
                .where(m.workers.c.stopped_at.is_(None),
                       m.workers.c.heartbeat_at >= self.now - timedelta(minutes=1))
            ).scalar()  # fmt: skip
            released, after_upstream = self._latencies(conn)
        g = GaugeMetricFamily("orchestrator_task_instances", "Task instances by state",
                              labels=["state"])  # fmt: skip
        counts = dict(ti_states)
        for state in TaskState:
            g.add_metric([state.value], counts.get(state.value, 0))
        yield g
        g = GaugeMetricFamily("orchestrator_dag_runs", "DAG runs by state", labels=["state"])
        counts = dict(run_states)
        for state in RunState:
            g.add_metric([state.value], counts.get(state.value, 0))
        yield g
        c = CounterMetricFamily("orchestrator_task_tries", "Task tries started, and how they "
                                "ended (rows in the store)", labels=["outcome"])  # fmt: skip
        by = {"started": 0, "succeeded": 0, "failed": 0, "lost": 0}
        lost = dict.fromkeys(LOST_REASONS, 0)
        for state, reason, n in try_states:
            by["started"] += n
            reason = reason or (state if state in LOST_REASONS else None)
            if reason is not None:
                by["lost"] += n
                lost[reason] = lost.get(reason, 0) + n
            elif state in TRY_OUTCOMES:
                by[TRY_OUTCOMES[state]] += n
        for outcome, n in by.items():
            c.add_metric([outcome], n)
        yield c
        c = CounterMetricFamily("orchestrator_task_tries_lost", "Task tries lost to "
                                "infrastructure, by reason (rows in the store)",
                                labels=["reason"])  # fmt: skip
        for reason, n in sorted(lost.items()):
            c.add_metric([reason], n)
        yield c
        g = GaugeMetricFamily("orchestrator_queue_depth", "Claimable task instances per queue",
                              labels=["queue"])  # fmt: skip
        for queue, n in depth:
            g.add_metric([queue], n)
        yield g
        yield GaugeMetricFamily("orchestrator_import_errors", "DAG files that fail to import",
                                value=errors or 0)  # fmt: skip
        up = lease is not None and lease.expires_at >= self.now
        yield GaugeMetricFamily("orchestrator_scheduler_leader_up",
                                "1 if a scheduler holds an unexpired leader lease", value=int(up))  # fmt: skip
        g = GaugeMetricFamily("orchestrator_scheduler_leader_epoch", "Leader lease epoch "
                              "(a change means a takeover)", labels=["holder"])  # fmt: skip
        if lease is not None:
            g.add_metric([lease.holder], lease.epoch)
        yield g
        yield GaugeMetricFamily("orchestrator_workers_live",
                                "Workers that heartbeated in the last minute", value=live or 0)  # fmt: skip
        yield histogram("orchestrator_release_to_start_seconds",
                        "Queued (released or retry due) to claimed, tries started in the window",
                        released)  # fmt: skip
        yield histogram("orchestrator_upstream_to_start_seconds",
                        "Last upstream task's end to the downstream task's start, in the window",
                        after_upstream)  # fmt: skip
        kinds, deliveries = self.store.alert_counts()
        c = CounterMetricFamily("orchestrator_alerts", "Alerts raised, by kind", labels=["kind"])
        for kind, n in sorted(kinds.items()):
            c.add_metric([kind], n)
        yield c
        g = GaugeMetricFamily("orchestrator_alert_deliveries", "Alert deliveries by state",
                              labels=["notifier", "state"])  # fmt: skip
        for (notifier, state), n in sorted(deliveries.items()):
            g.add_metric([notifier, state], n)
        yield g

    def _latencies(self, conn: Any) -> tuple[list[float], list[float]]:
        ti = m.task_instances
        rows = conn.execute(
            select(ti.c.run_pk, ti.c.task_id, ti.c.ready_at, ti.c.start_date, ti.c.dag_id)
            .where(ti.c.start_date >= self.now - self.window, ti.c.ready_at.is_not(None))
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
                spec = self.store.spec(*versions[x.run_pk])
            except Exception:  # noqa: BLE001 - a missing version only drops a sample
                continue
            task = spec.tasks.get(x.task_id)
            up_ends = [ends.get((x.run_pk, u)) for u in (task.upstream if task else ())]
            if up_ends and all(up_ends):
                after.append(max((x.start_date - max(up_ends)).total_seconds(), 0.0))
        return released, after


def render(store: Any, now: datetime) -> bytes:
    """The Prometheus text exposition of the store's metrics at ``now``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store, now))  # type: ignore[arg-type]
    return generate_latest(registry)
