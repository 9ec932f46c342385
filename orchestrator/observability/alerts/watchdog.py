"""The alert watchdog: a ``check(now)`` that raises each alert once, independent of the
code that creates runs.

It reads the event log from its cursor (dead letters, failed runs, recoveries,
retries), asks the schedule which fire time should have a run by now (missed runs),
compares running runs with their DAG's deadline (late runs) and checks invariant 1
(duplicate runs). Raising is idempotent (a unique key per event), so two watchdogs,
or one that crashed before moving its cursor, never alert twice.

>>> watchdog = AlertWatchdog(store, settings)           # doctest: +SKIP
>>> [a.kind for a in watchdog.check(clock.now())]       # doctest: +SKIP
['run_missed']
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from orchestrator.authoring import alerts as am
from orchestrator.authoring.spec import DagSpec
from orchestrator.errors import NotFoundError
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.records import EventRecord
from orchestrator.store.observe.alert_store import AlertRecord

log = logging.getLogger(__name__)
CURSOR = "watchdog"
MIN_GRACE = timedelta(minutes=1)  # a run is "missed" only once this much past its fire time
LATE_LOOKBACK = timedelta(days=2)  # late runs are looked for this far past their deadline
DUPLICATE_LOOKBACK = timedelta(days=7)


def settings_notifiers(settings: Settings) -> list[dict[str, Any]]:
    """Notifiers declared for every DAG in the settings (alert_webhook, alert_email,
    alert_slack)."""
    out = []
    if getattr(settings, "alert_webhook", None):
        out.append(am.parse_notifier(settings.alert_webhook))
    if getattr(settings, "alert_email", None):
        out.append(am.parse_notifier(am.email(settings.alert_email.split(","))))
    if getattr(settings, "alert_slack", None):
        out.append(am.parse_notifier(am.slack(settings.alert_slack)))
    return out


def notifiers_for(
    spec: DagSpec | None, task_id: str | None, kind: str, extra: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The DAG's, the task's and the settings' notifiers that want ``kind``, and callbacks."""
    out = [n for n in extra if am.wanted(n, kind)]
    if spec is None:
        return out
    task = spec.tasks.get(task_id) if task_id else None
    out += [n for n in spec.alerts if am.wanted(n, kind)]
    if task is not None:
        out += [n for n in task.alerts if am.wanted(n, kind)]
    for hook in spec.callbacks:
        if kind in am.DAG_HOOKS.get(hook, ()):
            target = [spec.fileloc, spec.dag_id, "", hook]
            out.append({"kind": "callback", "target": target, "events": [kind]})
    if task is not None:
        for hook in task.callbacks:
            if kind in am.TASK_HOOKS.get(hook, ()):
                target = [spec.fileloc, spec.dag_id, task.task_id, hook]
                out.append({"kind": "callback", "target": target, "events": [kind]})
    return out


class AlertWatchdog:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.extra = settings_notifiers(settings)

    def check(self, now: datetime) -> list[AlertRecord]:
        """Raise every alert due at ``now``; each check is guarded so one failure never
        stops the others. Returns the alerts raised by this call."""
        raised: list[AlertRecord] = []
        for step in (self._from_events, self._missed, self._late, self._duplicates):
            try:
                raised += step(now)
            except Exception:  # noqa: BLE001 - a loop boundary: log and go on
                log.exception("alert check %s failed", step.__name__)
        for alert in raised:
            log.warning(
                "alert %s dag_id=%s run_id=%s task_id=%s try=%s: %s",
                alert.kind, alert.dag_id, alert.run_id, alert.task_id, alert.try_number,
                alert.message,
            )  # fmt: skip
        return raised

    def _raise(
        self, spec: DagSpec | None, key: str, kind: str, message: str, now: datetime, **ids: Any
    ) -> list[AlertRecord]:
        notifiers = notifiers_for(spec, ids.get("task_id"), kind, self.extra)
        if kind in am.CALLBACK_KINDS and not notifiers:
            return []  # retries and successes are only raised when someone asked for them
        alert = self.store.raise_alert(key, kind, message, now, notifiers=notifiers, **ids)
        return [alert] if alert is not None else []

    # -- from the event log ----------------------------------------------------------------
    def _from_events(self, now: datetime) -> list[AlertRecord]:
        raised: list[AlertRecord] = []
        cursor = self.store.alert_cursor(CURSOR)
        while True:
            events = self.store.events_after(cursor)
            if not events:
                return raised
            for event in events:
                raised += self._on_event(event, now)
            if not self.store.advance_alert_cursor(CURSOR, cursor, events[-1].id):
                return raised  # another watchdog moved it; the unique keys keep us honest
            cursor = events[-1].id

    def _on_event(self, e: EventRecord, now: datetime) -> list[AlertRecord]:
        if e.kind not in ("task_dead_lettered", "task_retry", "run_failed", "run_success"):
            return []
        try:
            run = self.store.get_run(e.run_id or "")
            spec = self.store.spec(run.dag_id, run.version_hash)
        except NotFoundError:
            return []  # the run was cleaned away since
        ids = {"dag_id": e.dag_id, "run_id": e.run_id, "logical_date": run.logical_date}
        if e.kind in ("task_dead_lettered", "task_retry"):
            kind = am.TASK_DEAD_LETTERED if e.kind == "task_dead_lettered" else am.TASK_RETRY
            key = f"{kind}:{e.run_id}:{e.task_id}:{e.try_number}"
            label = e.task_id
            if e.map_index is not None:  # one alert per instance of a mapped task
                key += f":{e.map_index}"
                label = f"{e.task_id}[{e.map_index}]"
            ids.update(task_id=e.task_id, try_number=e.try_number)
            return self._raise(spec, key, kind, f"task {label}: {e.message}", now, **ids)
        if e.kind == "run_failed":
            return self._raise(spec, f"run_failed:{e.run_id}:{e.id}", am.RUN_FAILED,
                               f"run {e.run_id} failed", now, **ids)  # fmt: skip
        out = self._raise(spec, f"run_success:{e.run_id}:{e.id}", am.RUN_SUCCESS,
                          f"run {e.run_id} succeeded", now, **ids)  # fmt: skip
        if am.is_recovery(self.store.previous_finished_states(run)):
            out += self._raise(spec, f"recovered:{e.run_id}:{e.id}", am.RECOVERED,
                               f"DAG {run.dag_id} recovered: run {e.run_id} succeeded after "
                               "a failed run", now, **ids)  # fmt: skip
        return out

    # -- from the schedule -----------------------------------------------------------------
    def _missed(self, now: datetime) -> list[AlertRecord]:
        raised: list[AlertRecord] = []
        for dag in self.store.list_dags():
            if dag.is_paused:
                continue
            spec = self.store.spec(dag.dag_id, dag.version_hash)
            if spec.schedule.kind == "none":
                continue
            since = self.store.schedule_watermark(dag.dag_id)
            grace = max(spec.misfire_grace, MIN_GRACE)
            fire = am.missed_fire_time(spec.schedule.previous_before, now, grace, since or now)
            if fire is None or self.store.fire_accounted(dag.dag_id, fire):
                continue
            message = (
                f"DAG {dag.dag_id}: no run for fire time {fire.isoformat()} within its grace "
                f"({grace}) and no misfire decision recorded: is a scheduler running?"
            )
            key = f"run_missed:{dag.dag_id}:{fire.isoformat()}"
            raised += self._raise(spec, key, am.RUN_MISSED, message, now,
                                  dag_id=dag.dag_id, logical_date=fire)  # fmt: skip
        return raised

    def _late(self, now: datetime) -> list[AlertRecord]:
        raised: list[AlertRecord] = []
        for dag in self.store.list_dags():
            spec = self.store.spec(dag.dag_id, dag.version_hash)
            if spec.deadline is None:
                continue
            hi = now - spec.deadline
            for run in self.store.runs_due_by(dag.dag_id, hi - LATE_LOOKBACK, hi):
                if not am.is_late(run.logical_date, run.end_date, spec.deadline, now):
                    continue
                if run.state == "cancelled":
                    continue
                due = run.logical_date + spec.deadline
                message = (
                    f"run {run.run_id} not finished by its deadline {due.isoformat()} "
                    f"(logical date + {spec.deadline}); state {run.state}"
                )
                raised += self._raise(spec, f"run_late:{run.run_id}", am.RUN_LATE, message, now,
                                      dag_id=dag.dag_id, run_id=run.run_id,
                                      logical_date=run.logical_date)  # fmt: skip
        return raised

    def _duplicates(self, now: datetime) -> list[AlertRecord]:
        raised: list[AlertRecord] = []
        rows = self.store.shared_fire_times(now - DUPLICATE_LOOKBACK)
        for dag_id, when, run_ids in am.find_duplicates(rows):
            message = (
                f"DAG {dag_id} has {len(run_ids)} runs for one fire time {when.isoformat()}: "
                f"{', '.join(run_ids)} (invariant 1 broken)"
            )
            try:
                spec = self.store.current_spec(dag_id)
            except NotFoundError:
                spec = None
            key = f"duplicate_run:{dag_id}:{when.isoformat()}"
            raised += self._raise(spec, key, am.DUPLICATE_RUN, message, now,
                                  dag_id=dag_id, logical_date=when)  # fmt: skip
        return raised
