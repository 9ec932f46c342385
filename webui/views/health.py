"""``GET /health``: 200 when the cluster can do its work, 503 (JSON) saying what is wrong.

Checked on every request: the metadata database answers a read and takes a write (a
row inserted and rolled back), it is still the database this process opened (a SQLite
file deleted or replaced under it), the disk of the state folder and of the SQLite
file has ``health_min_free_mb`` free, a scheduler holds a live leader lease (it
renews the lease while it ticks, so a stuck or dead scheduler loses it within
``lease_seconds``), and at least one worker heartbeated within ``lease_seconds``.

>>> client.get("/health").get_json()["status"]       # doctest: +SKIP
'ok'
"""

from __future__ import annotations

import logging
import os
import shutil
from datetime import timedelta
from typing import Any

from flask import Blueprint, jsonify
from werkzeug.wrappers import Response

from orchestrator.store.identity import sqlite_path

from ..current import get_settings, get_store, now
from ..queries import health_facts

log = logging.getLogger(__name__)

bp = Blueprint("health", __name__)


@bp.get("/health")
def health() -> tuple[Response, int]:
    store, settings, at = get_store(), get_settings(), now()
    checks: dict[str, dict[str, Any]] = {}
    problems: list[str] = []

    def fail(check: str, message: str, **facts: Any) -> None:
        checks[check] = {"ok": False, "message": message, **facts}
        problems.append(message)

    lease = timedelta(seconds=settings.lease_seconds)
    facts = None
    try:
        facts = health_facts(store, alive_since=at - lease)
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        log.warning("health check: the metadata database did not answer", exc_info=True)
        fail("database", f"the metadata database did not answer ({_describe(exc)})")
    if facts is not None:
        try:
            store.probe_write()
            checks["database"] = {"ok": True}
        except Exception as exc:  # noqa: BLE001
            log.warning("health check: the metadata database refused a write", exc_info=True)
            fail("database", f"the metadata database refused a write ({_describe(exc)})")

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
        if facts.workers_alive:
            checks["workers"] = {"ok": True, "alive": facts.workers_alive, "last_heartbeat": last}
        else:
            fail(
                "workers",
                f"no worker heartbeated in the last {settings.lease_seconds:g}s"
                + (f" (last at {last})" if last else " (none has ever run)"),
                alive=0,
                last_heartbeat=last,
            )

    body: dict[str, Any] = {"status": "error" if problems else "ok", "checks": checks}
    if problems:
        body["message"] = "; ".join(problems)
        return jsonify(body), 503
    return jsonify(body), 200


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
