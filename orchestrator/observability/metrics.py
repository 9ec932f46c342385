"""Prometheus metrics, computed from the store at scrape time.

Nothing is counted in the hot path: the store already holds every fact (states,
tries, timestamps), so a scrape reads them with a handful of grouped queries
(``store.metrics_facts``, in ``store/reads/metrics_facts.py``) and this module shapes
them as Prometheus metric families. That keeps the scheduler and workers free of
metrics code, makes every process's view the same (no per-process counters to add
up), and survives restarts. Latency histograms cover tries started in the last
``window`` (default 1 hour); see docs/observability.md.

>>> text = render(store, clock.now())          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from orchestrator.states import RunState, TaskState

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
TRY_OUTCOMES = {"success": "succeeded", "failed": "failed", "timeout": "failed",
                "crashed": "failed", "lost": "lost"}  # fmt: skip
LOST_REASONS = ("lease_expired", "handed_back")  # a try's lost_reason; before 0008, its state


def histogram(name: str, doc: str, values: Sequence[float]) -> HistogramMetricFamily:
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
        facts = self.store.metrics_facts(self.now, self.window)
        g = GaugeMetricFamily("orchestrator_task_instances", "Task instances by state",
                              labels=["state"])  # fmt: skip
        counts = facts.task_instances
        for state in TaskState:
            g.add_metric([state.value], counts.get(state.value, 0))
        yield g
        g = GaugeMetricFamily("orchestrator_dag_runs", "DAG runs by state", labels=["state"])
        counts = facts.dag_runs
        for state in RunState:
            g.add_metric([state.value], counts.get(state.value, 0))
        yield g
        c = CounterMetricFamily("orchestrator_task_tries", "Task tries started, and how they "
                                "ended (rows in the store)", labels=["outcome"])  # fmt: skip
        by = {"started": 0, "succeeded": 0, "failed": 0, "lost": 0}
        lost = dict.fromkeys(LOST_REASONS, 0)
        for state, reason, n in facts.tries:
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
        for queue, n in facts.queue_depth.items():
            g.add_metric([queue], n)
        yield g
        yield GaugeMetricFamily("orchestrator_import_errors", "DAG files that fail to import",
                                value=facts.import_errors)  # fmt: skip
        lease = facts.lease
        up = lease is not None and lease.expires_at >= self.now
        yield GaugeMetricFamily("orchestrator_scheduler_leader_up",
                                "1 if a scheduler holds an unexpired leader lease", value=int(up))  # fmt: skip
        g = GaugeMetricFamily("orchestrator_scheduler_leader_epoch", "Leader lease epoch "
                              "(a change means a takeover)", labels=["holder"])  # fmt: skip
        if lease is not None:
            g.add_metric([lease.holder], lease.epoch)
        yield g
        yield GaugeMetricFamily("orchestrator_workers_live",
                                "Workers that heartbeated in the last minute",
                                value=facts.workers_live)  # fmt: skip
        yield histogram("orchestrator_release_to_start_seconds",
                        "Queued (released or retry due) to claimed, tries started in the window",
                        facts.release_to_start)  # fmt: skip
        yield histogram("orchestrator_upstream_to_start_seconds",
                        "Last upstream task's end to the downstream task's start, in the window",
                        facts.upstream_to_start)  # fmt: skip
        yield from _triggerer_metrics(self.store, self.now)  # issue 30
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


def render(store: Any, now: datetime) -> bytes:
    """The Prometheus text exposition of the store's metrics at ``now``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store, now))  # type: ignore[arg-type]
    return generate_latest(registry)


def _triggerer_metrics(store: Any, now: datetime) -> Iterator[Metric]:
    """Triggerers (issue 30): the triggers each runs, its event loop's lag and how often
    a trigger blocked it; the asset watchers' messages and rejects."""
    rows = store.triggerers()
    live = [t for t in rows if now - t.heartbeat_at <= timedelta(minutes=1)]
    yield GaugeMetricFamily("orchestrator_triggerers_live",
                            "Triggerers that heartbeated in the last minute", value=len(live))  # fmt: skip
    g = GaugeMetricFamily("orchestrator_triggerer_triggers", "Triggers each triggerer runs",
                          labels=["triggerer"])  # fmt: skip
    lag = GaugeMetricFamily("orchestrator_triggerer_loop_lag_seconds", "How late the "
                            "triggerer's event loop ran at its last heartbeat (a blocked "
                            "loop: the time it was blocked)", labels=["triggerer"])  # fmt: skip
    blocked = CounterMetricFamily("orchestrator_triggerer_loop_blocked", "Times a trigger "
                                  "blocked the triggerer's event loop", labels=["triggerer"])  # fmt: skip
    for t in rows:
        g.add_metric([t.triggerer_id], t.triggers)
        lag.add_metric([t.triggerer_id], t.loop_lag)
        blocked.add_metric([t.triggerer_id], t.blocked_count)
    yield g
    yield lag
    yield blocked
    watchers = store.watcher_states() if hasattr(store, "watcher_states") else []
    msgs = CounterMetricFamily("orchestrator_watcher_messages", "Messages an asset watcher "
                               "turned into asset events", labels=["watcher"])  # fmt: skip
    rej = CounterMetricFamily("orchestrator_watcher_rejected", "Messages an asset watcher "
                              "rejected (not JSON, too large, bad signature)", labels=["watcher"])  # fmt: skip
    up = GaugeMetricFamily("orchestrator_watcher_connected", "1 if the watcher is connected "
                           "to its broker", labels=["watcher"])  # fmt: skip
    for w in watchers:
        msgs.add_metric([w.key], w.messages)
        rej.add_metric([w.key], w.rejected)
        up.add_metric([w.key], int(w.state == "connected"))
    yield msgs
    yield rej
    yield up
