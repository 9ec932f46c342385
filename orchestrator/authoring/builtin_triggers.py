"""The built-in triggers (issue 30), public as :mod:`orchestrator.triggers`.

Each is a :class:`~orchestrator.authoring.triggers.BaseTrigger` with Airflow's name
and shape where Airflow has one: :class:`DateTimeTrigger` / :class:`TimeDeltaTrigger`
(a moment), :class:`FileTrigger` (a glob, polled: no inotify, so it works on network
file systems), :class:`HttpTrigger` (an HTTP status), :class:`DagStateTrigger` (another
DAG's run at a logical date) and :class:`AssetEventTrigger` (an asset event after a
moment). Blocking work (an HTTP request, a store read) runs in a thread
(``asyncio.to_thread``), never on the triggerer's loop::

    from datetime import timedelta
    from orchestrator.triggers import TimeDeltaTrigger

    @task
    def wait(ctx):
        ctx.defer(trigger=TimeDeltaTrigger(timedelta(hours=1)), method_name="resume")
"""

from __future__ import annotations

import asyncio
import glob
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.authoring.triggers import BaseTrigger, TriggerEvent

_HERE = "orchestrator.triggers"
MAX_SLEEP = 60.0  # a long wait sleeps in steps, so a changed wall clock is noticed


def _aware(moment: datetime, what: str) -> datetime:
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise ValueError(f"{what} must be a timezone-aware datetime, got {moment!r}")
    return moment.astimezone(UTC)


def _positive(value: float, what: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
    return float(value)


class DateTimeTrigger(BaseTrigger):
    """Fires at ``moment`` (aware); the event's payload is the moment (ISO 8601)."""

    def __init__(self, moment: datetime) -> None:
        super().__init__()
        self.moment = _aware(moment, "DateTimeTrigger moment")

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{_HERE}.DateTimeTrigger", {"moment": self.moment}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while (left := (self.moment - datetime.now(UTC)).total_seconds()) > 0:
            await asyncio.sleep(min(left, MAX_SLEEP))
        yield TriggerEvent(self.moment.isoformat())


class TimeDeltaTrigger(DateTimeTrigger):
    """Fires ``delta`` after it was made (Airflow's: a DateTimeTrigger underneath)."""

    def __init__(self, delta: timedelta) -> None:
        if not isinstance(delta, timedelta):
            raise ValueError(f"TimeDeltaTrigger needs a timedelta, got {delta!r}")
        super().__init__(datetime.now(UTC) + delta)


class FileTrigger(BaseTrigger):
    """Fires when ``filepath`` (a glob pattern) matches a file, polled every
    ``poke_interval`` seconds; the payload lists the matches (at most 100)."""

    def __init__(self, filepath: str, poke_interval: float = 5.0, recursive: bool = False) -> None:
        super().__init__()
        if not isinstance(filepath, str) or not filepath:
            raise ValueError(f"FileTrigger filepath must be a path or glob, got {filepath!r}")
        self.filepath = filepath
        self.poke_interval = _positive(poke_interval, "FileTrigger poke_interval")
        self.recursive = bool(recursive)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{_HERE}.FileTrigger", {
            "filepath": self.filepath,
            "poke_interval": self.poke_interval,
            "recursive": self.recursive,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            found = sorted(
                p
                for p in await asyncio.to_thread(glob.glob, self.filepath, recursive=self.recursive)
                if os.path.isfile(p)
            )
            if found:
                yield TriggerEvent({"filepath": self.filepath, "files": found[:100]})
                return
            await asyncio.sleep(self.poke_interval)


class HttpTrigger(BaseTrigger):
    """Fires when ``method url`` answers one of ``expected_statuses`` (default 200),
    asked every ``poke_interval`` seconds; a connection error is another try later.
    The payload is ``{"url", "status", "body"}`` (the body's first 4 KiB)."""

    def __init__(
        self,
        url: str,
        method: str = "GET",
        expected_statuses: list[int] | tuple[int, ...] = (200,),
        poke_interval: float = 10.0,
        headers: dict[str, str] | None = None,
        request_timeout: float = 10.0,
    ) -> None:
        super().__init__()
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"HttpTrigger url must be http(s)://..., got {url!r}")
        self.url, self.method = url, method.upper()
        self.expected_statuses = [int(s) for s in expected_statuses]
        self.poke_interval = _positive(poke_interval, "HttpTrigger poke_interval")
        self.headers = dict(headers or {})
        self.request_timeout = _positive(request_timeout, "HttpTrigger request_timeout")

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{_HERE}.HttpTrigger", {
            "url": self.url,
            "method": self.method,
            "expected_statuses": self.expected_statuses,
            "poke_interval": self.poke_interval,
            "headers": self.headers,
            "request_timeout": self.request_timeout,
        }

    def _ask(self) -> tuple[int, str] | None:
        import requests

        try:
            r = requests.request(
                self.method, self.url, headers=self.headers, timeout=self.request_timeout
            )
        except requests.RequestException:
            return None
        return r.status_code, r.text[:4096]

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            answer = await asyncio.to_thread(self._ask)
            if answer is not None and answer[0] in self.expected_statuses:
                yield TriggerEvent({"url": self.url, "status": answer[0], "body": answer[1]})
                return
            await asyncio.sleep(self.poke_interval)


class DagStateTrigger(BaseTrigger):
    """Fires when DAG ``dag_id``'s run at ``logical_date`` reaches one of ``states``
    (default success); one of ``failed_states`` (default failed) fails the task."""

    def __init__(
        self,
        dag_id: str,
        logical_date: datetime,
        states: list[str] | tuple[str, ...] = ("success",),
        failed_states: list[str] | tuple[str, ...] = ("failed",),
        poke_interval: float = 5.0,
    ) -> None:
        super().__init__()
        self.dag_id = dag_id
        self.logical_date = _aware(logical_date, "DagStateTrigger logical_date")
        self.states, self.failed_states = list(states), list(failed_states)
        self.poke_interval = _positive(poke_interval, "DagStateTrigger poke_interval")

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{_HERE}.DagStateTrigger", {
            "dag_id": self.dag_id,
            "logical_date": self.logical_date,
            "states": self.states,
            "failed_states": self.failed_states,
            "poke_interval": self.poke_interval,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            state = await asyncio.to_thread(
                self.reads.dag_run_state, self.dag_id, self.logical_date
            )
            if state in self.failed_states:
                raise RuntimeError(
                    f"the run of {self.dag_id} at {self.logical_date.isoformat()} is {state}"
                )
            if state in self.states:
                yield TriggerEvent(
                    {"dag_id": self.dag_id, "logical_date": self.logical_date.isoformat(),
                     "state": state}
                )  # fmt: skip
                return
            await asyncio.sleep(self.poke_interval)


class AssetEventTrigger(BaseTrigger):
    """Fires on the first event of asset ``uri`` after ``since`` (default: when the
    trigger was made); the payload is that event (id, uri, at, extra)."""

    def __init__(self, uri: str, since: datetime | None = None, poke_interval: float = 1.0) -> None:
        super().__init__()
        self.uri = getattr(uri, "uri", uri)
        self.since = _aware(since, "AssetEventTrigger since") if since else datetime.now(UTC)
        self.poke_interval = _positive(poke_interval, "AssetEventTrigger poke_interval")

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{_HERE}.AssetEventTrigger", {
            "uri": self.uri,
            "since": self.since,
            "poke_interval": self.poke_interval,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            events = await asyncio.to_thread(self.reads.asset_events_after, self.uri, self.since)
            if events:
                yield TriggerEvent(events[0])
                return
            await asyncio.sleep(self.poke_interval)
