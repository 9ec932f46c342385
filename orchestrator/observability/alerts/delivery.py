"""The alert loop: watchdog checks and deliveries, in their own thread.

It never runs in the scheduler's tick: a slow webhook or SMTP server delays only
alerts. Each due delivery is taken under a lease, sent, and closed as delivered,
pending again (with exponential backoff) or failed after ``alert_max_attempts``.

>>> loop = AlertLoop(store, clock, settings)    # doctest: +SKIP
>>> loop.tick(clock.now())                      # check, then deliver what is due
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from orchestrator.clock import Clock
from orchestrator.observability.alerts.notifiers import DeliveryError, send
from orchestrator.observability.alerts.watchdog import AlertWatchdog
from orchestrator.settings import Settings
from orchestrator.store import Store

log = logging.getLogger(__name__)
BACKOFF = timedelta(seconds=5)  # first retry after this, then doubling
MAX_BACKOFF = timedelta(minutes=10)


def backoff(attempts: int) -> timedelta:
    """Delay before the next attempt after ``attempts`` failed ones."""
    return min(BACKOFF * 2 ** max(attempts - 1, 0), MAX_BACKOFF)


class AlertDelivery:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.lease = timedelta(seconds=settings.alert_timeout * 3 + 30)

    def tick(self, now: datetime) -> int:
        """Send every delivery due at ``now``; returns how many attempts were made."""
        jobs = self.store.claim_deliveries(now, self.lease)
        for job in jobs:
            payload = job.alert.payload()
            try:
                send(job.target, payload, self.settings)
            except DeliveryError as exc:
                attempts = job.attempts + 1
                retry = exc.retry and attempts < self.settings.alert_max_attempts
                retry_at = now + backoff(attempts) if retry else None
                self.store.delivery_done(job.id, now, error=str(exc)[-2000:], retry_at=retry_at)
                log.warning(
                    "alert delivery %s alert_id=%s attempt %s failed%s: %s",
                    job.notifier, job.alert.id, attempts,
                    f", retry at {retry_at.isoformat()}" if retry_at else ", giving up", exc,
                )  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - never let one alert stop the loop
                log.exception("alert delivery %s alert_id=%s crashed", job.notifier, job.alert.id)
                self.store.delivery_done(job.id, now, error=repr(exc), retry_at=None)
            else:
                self.store.delivery_done(job.id, now)
                log.info("alert delivered %s alert_id=%s", job.notifier, job.alert.id)
        return len(jobs)


class AlertLoop:
    """Watchdog plus delivery: a ``tick(now)`` and a thin ``run_forever``."""

    def __init__(self, store: Store, clock: Clock, settings: Settings) -> None:
        self.clock = clock
        self.settings = settings
        self.watchdog = AlertWatchdog(store, settings)
        self.delivery = AlertDelivery(store, settings)

    def tick(self, now: datetime) -> int:
        self.watchdog.check(now)
        return self.delivery.tick(now)

    def run_forever(self, stop: threading.Event) -> None:
        log.info("alert loop started")
        while not stop.is_set():
            try:
                self.tick(self.clock.now())
            except Exception:  # noqa: BLE001
                log.exception("alert loop tick failed; retrying")
            stop.wait(self.settings.alert_interval)
        log.info("alert loop stopped")


def start_alert_thread(store: Store, clock: Clock, settings: Settings, stop: threading.Event):
    """Run the alert loop in a daemon thread of this process (standalone, scheduler)."""
    loop = AlertLoop(store, clock, settings)
    thread = threading.Thread(target=loop.run_forever, args=(stop,), name="alerts", daemon=True)
    thread.start()
    return thread
