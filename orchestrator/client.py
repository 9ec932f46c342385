"""A Python client for the web server's JSON API (``/api/v1``), with an API token.

>>> from orchestrator.client import Client, ClientError
>>> c = Client("https://orchestrator.example.com", token=os.environ["ORC_TOKEN"])  # doctest: +SKIP
>>> run_id = c.trigger("etl", conf={"day": "2026-01-31"})                         # doctest: +SKIP
>>> c.wait(run_id, timeout=600)["state"]                                           # doctest: +SKIP
'success'
>>> print(c.log(run_id, "load")["text"])                                           # doctest: +SKIP

Every method returns the API's JSON (dicts and lists of plain values, times as ISO
8601 strings). Every failure raises :class:`ClientError`: an HTTP error carries the
status and the API's ``detail`` as ``reason`` (``403: this needs the operator role;
ci acts as viewer``); a server that cannot be reached has ``status`` None. The token
acts with its role (``orchestrator users token NAME --role ROLE``): a viewer's token
reads, an operator's also triggers, clears, marks, pauses, backfills and cancels.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

import requests

from orchestrator.errors import OrchestratorError
from orchestrator.states import RUN_FINISHED

__all__ = ["Client", "ClientError", "RunTimeout"]


class ClientError(OrchestratorError):
    """The API refused or failed a request, or could not be reached.

    ``status``: the HTTP status (None when no answer came); ``reason``: the API's
    ``detail`` (or what went wrong on the way); ``body``: the JSON answer, if any.
    """

    def __init__(self, status: int | None, reason: str, body: Any = None) -> None:
        super().__init__(f"{status}: {reason}" if status is not None else reason)
        self.status = status
        self.reason = reason
        self.body = body


class RunTimeout(ClientError):
    """:meth:`Client.wait` gave up: the run was still not finished (``run`` is its last
    summary)."""

    def __init__(self, run_id: str, timeout: float, run: dict[str, Any]) -> None:
        state = run.get("state")
        super().__init__(None, f"run {run_id} is still {state} after {timeout:g} s", run)
        self.run = run


def _part(text: str) -> str:
    return quote(text, safe="")


class Client:
    """The API of the web server at ``base_url`` (``http://host:8080``), as ``token``.

    ``timeout`` bounds each HTTP request (seconds); :meth:`wait` has its own.

    >>> c = Client("http://127.0.0.1:8080", token="orc_3f9a0c12be45_...")  # doctest: +SKIP
    >>> [d["dag_id"] for d in c.list_dags()]                               # doctest: +SKIP
    ['etl', 'nightly_report']
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api = self.base_url + "/api/v1"
        self.timeout = timeout
        self.http = session or requests.Session()
        if token:
            self.http.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ------------------------------------------------------------------------

    def request(self, method: str, path: str, *, json: Any = None, params: Any = None) -> Any:
        """One API call (``path`` under ``/api/v1``); the JSON answer, or ClientError."""
        try:
            response = self.http.request(
                method,
                self.api + path,
                json=json,
                params=params,
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise ClientError(None, f"{method} {self.api}{path}: {exc}") from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 300:  # a redirect is a login page, never an answer
            detail = body.get("detail") if isinstance(body, dict) else None
            if not detail and response.status_code < 400:
                detail = f"redirected to {response.headers.get('Location') or '?'}"
            raise ClientError(response.status_code, str(detail or response.reason), body)
        if body is None:
            raise ClientError(response.status_code, f"{method} {path}: the answer is not JSON")
        return body

    # -- reading -------------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        """Who the server takes this client for: ``{"user", "role", "via"}``."""
        return self.request("GET", "/me")

    def list_dags(self, *, tag: str = "", search: str = "") -> list[dict[str, Any]]:
        """Every active DAG (``dag_id``, ``is_paused``, ``schedule``, ``next_logical_date``...)."""
        return self.request("GET", "/dags", params={"tag": tag, "q": search})["dags"]

    def get_dag(self, dag_id: str) -> dict[str, Any]:
        return self.request("GET", f"/dags/{_part(dag_id)}")

    def list_runs(
        self, dag_id: str, *, state: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        """A page of ``dag_id``'s runs, newest first."""
        params = {"limit": limit, "offset": offset} | ({"state": state} if state else {})
        return self.request("GET", f"/dags/{_part(dag_id)}/runs", params=params)["dag_runs"]

    def get_run(self, run_id: str) -> dict[str, Any]:
        """A run with its ``task_instances`` and ``tries``."""
        return self.request("GET", f"/runs/{_part(run_id)}")

    def run_summary(self, run_id: str) -> dict[str, Any]:
        """A run's ``state``, ``end_date`` and ``task_states``: cheap to poll."""
        return self.request("GET", f"/runs/{_part(run_id)}/summary")

    def log(
        self, run_id: str, task_id: str, try_number: int = 1, *, offset: int | None = None
    ) -> dict[str, Any]:
        """A try's log: ``text``, ``offset``, ``next_offset``, ``finished``; the tail
        without ``offset``, else from that byte on (pass ``next_offset`` to follow it)."""
        path = f"/runs/{_part(run_id)}/tasks/{_part(task_id)}/tries/{int(try_number)}/log"
        return self.request("GET", path, params={} if offset is None else {"offset": offset})

    def events(
        self,
        *,
        actor: str | None = None,
        dag_id: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """The event log, newest first; ``actor`` as the events page reads it (``ada``,
        ``api:ada``, ``cli:root``)."""
        given = {"actor": actor, "dag_id": dag_id, "run_id": run_id, "kind": kind}
        params = {k: v for k, v in given.items() if v} | {"limit": limit}
        return self.request("GET", "/events", params=params)["events"]

    # -- acting (an operator's token) ----------------------------------------------------

    def trigger(
        self,
        dag_id: str,
        conf: dict[str, Any] | None = None,
        *,
        logical_date: datetime | None = None,
    ) -> str:
        """Start a manual run of ``dag_id`` with ``conf`` (its declared params), at
        ``logical_date`` (timezone-aware; now by default); returns its run_id."""
        body: dict[str, Any] = {"conf": conf or {}}
        if logical_date is not None:
            if logical_date.tzinfo is None:
                raise ClientError(None, "logical_date must be timezone-aware")
            body["logical_date"] = logical_date.isoformat()
        return self.request("POST", f"/dags/{_part(dag_id)}/runs", json=body)["run_id"]

    def wait(self, run_id: str, timeout: float = 3600.0, *, poll: float = 2.0) -> dict[str, Any]:
        """Poll until ``run_id`` is finished (success, failed or cancelled); its summary.

        Raises :class:`RunTimeout` (a ClientError) when ``timeout`` seconds pass first.
        """
        deadline = time.monotonic() + timeout
        while True:
            run = self.run_summary(run_id)
            if run.get("state") in RUN_FINISHED:
                return run
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunTimeout(run_id, timeout, run)
            time.sleep(min(poll, left))

    def clear(self, run_id: str, task_id: str, *, downstream: bool = False) -> str:
        """Run a finished task again (and its downstream); the server's message."""
        path = f"/runs/{_part(run_id)}/tasks/{_part(task_id)}/clear"
        return self.request("POST", path, json={"downstream": downstream})["message"]

    def mark(self, run_id: str, task_id: str, state: str) -> str:
        """Mark a task ``success`` or ``failed``; the server's message."""
        path = f"/runs/{_part(run_id)}/tasks/{_part(task_id)}/mark"
        return self.request("POST", path, json={"state": state})["message"]

    def pause(self, dag_id: str) -> str:
        return self._set_paused(dag_id, True)

    def unpause(self, dag_id: str) -> str:
        return self._set_paused(dag_id, False)

    def _set_paused(self, dag_id: str, paused: bool) -> str:
        body = {"paused": paused}
        return self.request("POST", f"/dags/{_part(dag_id)}/pause", json=body)["message"]

    def cancel(self, run_id: str) -> str:
        return self.request("POST", f"/runs/{_part(run_id)}/cancel", json={})["message"]

    def backfill(
        self, dag_id: str, start: str, end: str, conf: dict[str, Any] | None = None
    ) -> str:
        """Runs for every fire time from day ``start`` to day ``end`` (``2026-01-31``),
        with ``conf`` (checked against the DAG's params: ClientError 400 naming the rule)."""
        body: dict[str, Any] = {"start": start, "end": end}
        if conf is not None:
            body["conf"] = conf
        return self.request("POST", f"/dags/{_part(dag_id)}/backfill", json=body)["message"]

    def emit_asset_event(self, uri: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Record an event of the asset ``uri`` (``POST /api/v1/assets/events``), so the
        DAGs scheduled on it run; ``extra`` travels with the event. The answer as the
        assets API gives it."""
        return self.request("POST", "/assets/events", json={"uri": uri, "extra": extra or {}})
