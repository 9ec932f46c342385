"""Alert kinds, notifier declarations and the pure checks behind the watchdog.

Users declare notifiers in their DAG files; they are plain data (serialized with the
DAG, so the scheduler never imports user code)::

    from orchestrator.alerts import email, slack, webhook

    with DAG("etl", schedule="@daily", deadline=timedelta(hours=2),
             alerts=[webhook("https://hooks.example/orch"), email(["ops@example.com"]),
                     slack("https://hooks.slack.com/services/T0/B0/xyz")],
             on_missed=page_someone):
        ...

A webhook may carry a Jinja2 body template (:mod:`orchestrator.authoring.alert_body`)::

    webhook("https://chat.example/hook", body='{"text": {{ kind ~ ": " ~ message }}}')

>>> webhook("https://hooks.example/x", events=["run_failed"]).to_dict()["events"]
['run_failed']
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from orchestrator.authoring.alert_body import check_body
from orchestrator.errors import DagDefinitionError

TASK_DEAD_LETTERED = "task_dead_lettered"
RUN_FAILED = "run_failed"
RUN_MISSED = "run_missed"
RUN_LATE = "run_late"
DUPLICATE_RUN = "duplicate_run"
RECOVERED = "recovered"
TASK_RETRY = "task_retry"  # only raised for an on_retry callback
RUN_SUCCESS = "run_success"  # only raised for an on_success callback

ALERT_KINDS = (TASK_DEAD_LETTERED, RUN_FAILED, RUN_MISSED, RUN_LATE, DUPLICATE_RUN, RECOVERED)
CALLBACK_KINDS = (TASK_RETRY, RUN_SUCCESS)
ALL_KINDS = ALERT_KINDS + CALLBACK_KINDS

# which callback hook runs for which alert kind, on a DAG and on a task
DAG_HOOKS = {
    "on_failure": (RUN_FAILED,),
    "on_success": (RUN_SUCCESS,),
    "on_retry": (TASK_RETRY,),
    "on_missed": (RUN_MISSED,),
}
TASK_HOOKS = {"on_failure": (TASK_DEAD_LETTERED,), "on_retry": (TASK_RETRY,)}
NOTIFIERS = ("webhook", "email", "slack")
_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Notifier:
    """A declared notifier: ``kind`` webhook, email or slack, its target, the events it
    wants, and a webhook's body template (None: the documented JSON payload)."""

    kind: str
    target: tuple[str, ...]
    events: tuple[str, ...] = ALERT_KINDS
    body: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "target": list(self.target), "events": list(self.events)}
        return out | ({"body": self.body} if self.body is not None else {})


def _declared_at() -> tuple[str | None, int | None]:
    """File and line of the DAG file statement that called a declaration helper."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(os.path.dirname(_HERE) + os.sep):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None, None


def webhook(url: str, *, events: Iterable[str] | None = None, body: str | None = None) -> Notifier:
    """POST each alert's JSON body (see docs/observability.md) to ``url``; with ``body``,
    the rendered Jinja2 template instead (:mod:`orchestrator.authoring.alert_body`)."""
    if body is not None:
        try:
            check_body(body)
        except ValueError as exc:
            fileloc, lineno = _declared_at()
            raise DagDefinitionError(
                f"webhook {url!r}: {exc}", fileloc=fileloc, lineno=lineno
            ) from None
    return Notifier("webhook", (url,), tuple(events) if events is not None else ALERT_KINDS, body)


def slack(webhook_url: str, *, events: Iterable[str] | None = None) -> Notifier:
    """Post each alert to a Slack incoming webhook (``text`` and Block Kit ``blocks``)."""
    return Notifier("slack", (webhook_url,), tuple(events) if events is not None else ALERT_KINDS)


def email(to: str | Iterable[str], *, events: Iterable[str] | None = None) -> Notifier:
    """Mail each alert to ``to`` through the SMTP server in the settings."""
    rcpt = (to,) if isinstance(to, str) else tuple(to)
    return Notifier("email", rcpt, tuple(events) if events is not None else ALERT_KINDS)


def parse_notifier(value: Any) -> dict[str, Any]:
    """A declaration as stored: from a Notifier, a URL, ``mailto:`` or a dict. ValueError."""
    if isinstance(value, str):
        if value.startswith(("http://", "https://")):
            value = webhook(value)
        elif value.startswith("mailto:"):
            value = email(value[len("mailto:") :].split(","))
        else:
            raise ValueError(f"alert {value!r}: expected an http(s):// URL or mailto:address")
    data = value.to_dict() if isinstance(value, Notifier) else value
    if not isinstance(data, dict) or data.get("kind") not in NOTIFIERS:
        raise ValueError(
            f"alert {value!r}: use orchestrator.alerts.webhook(...), email(...) or slack(...)"
        )
    target = data.get("target")
    target = [target] if isinstance(target, str) else list(target or [])
    if not target or not all(isinstance(t, str) and t for t in target):
        raise ValueError(f"{data['kind']} alert needs a target (URL or addresses)")
    events = list(data.get("events") or ALERT_KINDS)
    unknown = sorted(set(events) - set(ALL_KINDS))
    if unknown:
        raise ValueError(f"unknown alert event(s) {unknown}: use {', '.join(ALL_KINDS)}")
    if data["kind"] in ("webhook", "slack") and not target[0].startswith(("http://", "https://")):
        raise ValueError(f"{data['kind']} alert needs an http(s):// URL, got {target[0]!r}")
    out = {"kind": data["kind"], "target": target, "events": events}
    if data.get("body") is not None:
        if data["kind"] != "webhook":
            raise ValueError(f"{data['kind']} alert: only a webhook takes a body template")
        check_body(data["body"])
        out["body"] = data["body"]
    return out


def alert_options(
    owner: str,
    alerts: Iterable[Any] | None,
    deadline: timedelta | float | None,
    hooks: dict[str, Callable[..., Any] | None],
    where: tuple[str | None, int | None],
) -> tuple[list[dict[str, Any]], timedelta | None, dict[str, Callable[..., Any]]]:
    """Validate ``alerts=``, ``deadline=`` and the ``on_*`` callbacks of a DAG or task."""

    def fail(message: str) -> DagDefinitionError:
        return DagDefinitionError(f"{owner}: {message}", fileloc=where[0], lineno=where[1])

    parsed = []
    for value in alerts or ():
        try:
            parsed.append(parse_notifier(value))
        except ValueError as exc:
            raise fail(str(exc)) from None
    if isinstance(deadline, int | float) and not isinstance(deadline, bool):
        deadline = timedelta(seconds=deadline)
    if deadline is not None and (not isinstance(deadline, timedelta) or deadline <= timedelta(0)):
        raise fail(f"deadline must be a positive timedelta or seconds, got {deadline!r}")
    callbacks = {}
    for name, fn in hooks.items():
        if fn is None:
            continue
        if not callable(fn):
            raise fail(f"{name} must be a function, got {fn!r}")
        callbacks[name] = fn
    return parsed, deadline, callbacks


def serialized(alerts: list[dict[str, Any]], callbacks: dict[str, Any]) -> dict[str, Any]:
    """The keys a DAG or task adds to its serialized form (none when nothing is declared)."""
    out: dict[str, Any] = {}
    if alerts:
        out["alerts"] = alerts
    if callbacks:
        out["callbacks"] = sorted(callbacks)
    return out


# -- pure checks -------------------------------------------------------------------------
def missed_fire_time(
    previous_before: Callable[[datetime], datetime | None],
    now: datetime,
    grace: timedelta,
    since: datetime,
) -> datetime | None:
    """The latest fire time whose grace has passed by ``now``, if it is after ``since``.

    ``previous_before(t)`` is the schedule's latest fire time strictly before ``t``.
    The caller then asks the store whether that fire time is accounted for (a run, or
    a recorded misfire decision); if not, it was missed.
    """
    fire = previous_before(now - grace)
    if fire is None or fire < since:
        return None
    return fire


def is_late(
    logical_date: datetime, end_date: datetime | None, deadline: timedelta, now: datetime
) -> bool:
    """A run is late once ``logical_date + deadline`` passes without it finishing."""
    due = logical_date + deadline
    if end_date is not None:
        return end_date > due
    return now > due


def find_duplicates(
    runs: Iterable[tuple[str, datetime, str]],
) -> list[tuple[str, datetime, list[str]]]:
    """Groups of run_ids sharing one (dag_id, logical_date): invariant 1 broken."""
    groups: dict[tuple[str, datetime], list[str]] = {}
    for dag_id, logical_date, run_id in runs:
        groups.setdefault((dag_id, logical_date), []).append(run_id)
    return [(d, t, sorted(ids)) for (d, t), ids in sorted(groups.items()) if len(ids) > 1]


def is_recovery(previous_states: list[str]) -> bool:
    """A success is a recovery when the finished run before it failed."""
    return bool(previous_states) and previous_states[0] == "failed"


def wanted(notifier: dict[str, Any], kind: str) -> bool:
    return kind in notifier.get("events", ALERT_KINDS)
