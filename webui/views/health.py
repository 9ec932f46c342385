"""``GET /health``: 200 when the cluster can do its work, 503 (JSON) saying what is wrong.

Checked: the metadata database answers a read and takes a write (a row inserted and
rolled back), it is still the database this process opened (a SQLite file deleted or
replaced under it), the disk of the state folder and of the SQLite file has
``health_min_free_mb`` free, a scheduler holds a live leader lease (it renews the
lease while it ticks, so a stuck or dead scheduler loses it within ``lease_seconds``),
and at least one worker heartbeated within ``lease_seconds``.

The database is asked at most once every :data:`DB_CHECK_SECONDS` (and by one request
at a time: the others wait for its answer); requests in between reuse what it found,
judged against the time of each request. The file's identity and the free space are
checked on every request (a ``stat`` each). So a load balancer probing many times a
second costs the database one read and one rolled-back write a second, and a probe
does not wait for the GIL behind the database round trips of busy page renders.

>>> client.get("/health").get_json()["status"]       # doctest: +SKIP
'ok'
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from flask import Blueprint, current_app, jsonify
from werkzeug.wrappers import Response

from orchestrator.store.core.identity import sqlite_path

from ..current import get_settings, get_store, now

log = logging.getLogger(__name__)

bp = Blueprint("health", __name__)

DB_CHECK_SECONDS = 1.0  # the longest a database answer is reused


@dataclass(frozen=True)
class _DatabaseAnswer:
    facts: Any  # HealthFacts, or None when the read failed
    read_error: str | None
    write_error: str | None
    asked_at: float  # time.monotonic()


class _DatabaseCheck:
    """The last database answer of one app, renewed by one request at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answer: _DatabaseAnswer | None = None

    def answer(self, store: Any) -> _DatabaseAnswer:
        with self._lock:
            last = self._answer
            if last is not None and time.monotonic() - last.asked_at < DB_CHECK_SECONDS:
                return last
            self._answer = _ask_database(store)
            return self._answer


def _ask_database(store: Any) -> _DatabaseAnswer:
    facts, read_error, write_error = None, None, None
    try:
        facts = store.health_facts()
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        log.warning("health check: the metadata database did not answer", exc_info=True)
        read_error = f"the metadata database did not answer ({_describe(exc)})"
    if facts is not None:
        try:
            store.probe_write()
        except Exception as exc:  # noqa: BLE001
            log.warning("health check: the metadata database refused a write", exc_info=True)
            write_error = f"the metadata database refused a write ({_describe(exc)})"
    return _DatabaseAnswer(facts, read_error, write_error, time.monotonic())


@bp.get("/health")
def health() -> tuple[Response, int]:
    store, settings, at = get_store(), get_settings(), now()
    checks: dict[str, dict[str, Any]] = {}
    problems: list[str] = []

    def fail(check: str, message: str, **facts: Any) -> None:
        checks[check] = {"ok": False, "message": message, **facts}
        problems.append(message)

    lease = timedelta(seconds=settings.lease_seconds)
    check = current_app.extensions.setdefault("orchestrator_health", _DatabaseCheck())
    answer = check.answer(store)  # judged against this request's time below
    facts = answer.facts
    if answer.read_error or answer.write_error:
        fail("database", answer.read_error or answer.write_error)
    else:
        checks["database"] = {"ok": True}

    problem = store.identity_problem()
    if problem is not None:
        log.error("health check: %s", problem)
        fail("identity", "the database file was deleted or replaced while in use (see the log)")
    else:
        checks["identity"] = {"ok": True}

    _check_disk(settings, checks, fail)

    if facts is not None:
        if facts.lease_expires_at is not None and facts.lease_expires_at >= at:
            checks["scheduler"] = {
                "ok": True,
                "leader": facts.leader,
                "lease_expires_at": facts.lease_expires_at.isoformat(),
            }
        elif facts.lease_expires_at is None:
            fail("scheduler", "no scheduler has ever run against this database")
        else:
            fail(
                "scheduler",
                "no scheduler is ticking: the leader lease expired at "
                f"{facts.lease_expires_at.isoformat()}",
                leader=facts.leader,
            )
        last = facts.last_worker_heartbeat.isoformat() if facts.last_worker_heartbeat else None
        alive = facts.workers_alive(since=at - lease)
        if alive:
            checks["workers"] = {"ok": True, "alive": alive, "last_heartbeat": last}
        else:
            fail(
                "workers",
                f"no worker heartbeated in the last {settings.lease_seconds:g}s"
                + (f" (last at {last})" if last else " (none has ever run)"),
                alive=0,
                last_heartbeat=last,
            )

    if facts is not None:  # issue 30: an asset watcher that lost its broker
        _check_watchers(store, checks, fail)

    body: dict[str, Any] = {"status": "error" if problems else "ok", "checks": checks}
    if problems:
        body["message"] = "; ".join(problems)
        return jsonify(body), 503
    return jsonify(body), 200


def _check_watchers(store: Any, checks: dict[str, dict[str, Any]], fail: Any) -> None:
    try:
        watchers = store.watcher_states()
    except Exception:  # noqa: BLE001 - the database check reports the database
        return
    if not watchers:
        return
    down = [w for w in watchers if w.state == "retrying"]
    if down:
        fail(
            "watchers",
            "; ".join(f"asset watcher {w.key} cannot reach its broker ({w.last_error}), "
                      f"retrying" for w in down),
            down=[w.key for w in down],
        )  # fmt: skip
    else:
        checks["watchers"] = {"ok": True, "watchers": len(watchers)}


def _check_disk(settings: Any, checks: dict[str, dict[str, Any]], fail: Any) -> None:
    """Free space on the disks the state folder (logs) and the SQLite file live on."""
    need = settings.health_min_free_mb
    places = {"state folder": settings.state_dir}
    path = sqlite_path(settings.database_url)
    if path is not None:
        places["database"] = os.path.dirname(path)
    free: dict[str, float] = {}
    for name, folder in places.items():
        while folder and not os.path.exists(folder):  # not created yet: its parent's disk
            folder = os.path.dirname(folder)
        try:
            free[name] = shutil.disk_usage(folder or "/").free / 2**20
        except OSError as exc:
            fail("disk", f"cannot read the free space of the {name}'s disk ({exc.strerror})")
            return
    low = {name: mb for name, mb in free.items() if mb < need}
    facts = {"free_mb": {name: round(mb, 1) for name, mb in free.items()}}
    if low:
        fail(
            "disk",
            ", ".join(f"only {mb:.0f} MB free on the {name}'s disk" for name, mb in low.items())
            + f" (health_min_free_mb is {need:g})",
            **facts,
        )
    else:
        checks["disk"] = {"ok": True, **facts}


def _describe(exc: BaseException) -> str:
    """The error's kind (and the database's own words when they name no path)."""
    orig = getattr(exc, "orig", None) or exc
    words = str(orig).splitlines()[0][:200] if str(orig) else ""
    kind = type(orig).__name__
    if words and "/" not in words and "\\" not in words:
        return f"{kind}: {words}"
    return kind
