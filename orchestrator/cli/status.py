"""``orchestrator status``: the leader, standby schedulers, live workers, queues."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from orchestrator.cli.common import Parents, emit, format_table, open_store
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    p = parents.add(
        sub, "status", "show the cluster: leader, schedulers, workers", json_output=True
    )
    p.set_defaults(handler=cmd_status)


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    alive = timedelta(seconds=settings.lease_seconds)
    status = store.cluster_status(alive_within=alive)
    if args.json:
        data = status.to_dict()
        data["schedulers"] = [s.to_dict() for s in status.schedulers]
        data["workers"] = [w.to_dict() for w in status.workers]
        data["pools"] = [p.to_dict() for p in store.pools()]
        data["triggerers"] = [t.to_dict() for t in store.triggerers()]  # issue 30
        emit(args, data)
        return 0
    if status.leader:
        print(
            f"leader: {status.leader} (epoch {status.leader_epoch}, lease until "
            f"{status.leader_expires_at.isoformat(timespec='seconds')})"
        )
    else:
        print("leader: none (no scheduler holds the lease: no runs are being created)")
    print()
    print("schedulers:")
    rows = [
        s.to_dict() | {"role": "leader" if s.is_leader else ("standby" if s.alive else "silent")}
        for s in status.schedulers
    ]
    print(format_table(rows, ("scheduler_id", "hostname", "pid", "role", "heartbeat_at")))
    print()
    print("workers:")
    rows = [
        w.to_dict() | {"queues": ",".join(w.queues), "state": "alive" if w.alive else "silent"}
        for w in status.workers
    ]
    print(
        format_table(rows, ("worker_id", "hostname", "queues", "running", "state", "heartbeat_at"))
    )
    print()
    triggerers = [  # issue 30
        t.to_dict() | {"state": "alive" if status.now - t.heartbeat_at <= alive else "silent",
                       "loop_lag": f"{t.loop_lag:.3f}s"}
        for t in store.triggerers()
    ]  # fmt: skip
    if triggerers:
        print("triggerers:")
        print(format_table(triggerers, ("triggerer_id", "triggers", "watchers", "loop_lag",
                                        "blocked_count", "state", "heartbeat_at")))  # fmt: skip
        print()
    queued = ", ".join(f"{q}: {n}" for q, n in sorted(status.queued_tasks.items())) or "none"
    print(f"running tasks: {status.running_tasks}; queued by queue: {queued}")
    pools = [p.to_dict() for p in store.pools()]
    if pools:
        print()
        print("pools:")
        print(format_table(pools, ("name", "slots", "used", "running", "queued")))
    return 0
