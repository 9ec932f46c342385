"""``orchestrator alerts list`` and ``orchestrator dags why``.

``dags why`` lives here (not in cli/dags.py) so the observability commands stay in
one module; it is added to the ``dags`` group's sub-commands at registration.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.common import Parents, emit, open_store, whole
from orchestrator.clock import SystemClock
from orchestrator.settings import Settings


def _subcommands(sub: Any, group: str) -> Any:
    """The sub-command action of an already registered group (e.g. ``dags``)."""
    parser = sub.choices[group]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def register(sub: Any, parents: Parents) -> None:
    alerts = sub.add_parser("alerts", help="alerts raised").add_subparsers(
        dest="action", required=True
    )
    p = parents.add(alerts, "list", "list alerts, newest first", json_output=True)
    p.add_argument("--dag", dest="dag_id", default=None)
    p.add_argument("--kind", default=None, help="e.g. run_failed, run_missed, run_late")
    p.add_argument("--limit", type=whole(1), default=50)
    p.add_argument("--deliveries", action="store_true", help="show each notifier's delivery")
    p.set_defaults(handler=cmd_alerts)
    if "dags" in sub.choices:
        p = parents.add(
            _subcommands(sub, "dags"), "why", "why was no run created when expected?",
            json_output=True,
        )  # fmt: skip
        p.add_argument("dag_id")
        p.set_defaults(handler=cmd_dags_why)


def cmd_alerts(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    alerts = store.list_alerts(dag_id=args.dag_id, kind=args.kind, limit=args.limit)
    rows = [a.to_dict() for a in alerts]
    if args.deliveries:
        for row in rows:
            row["deliveries"] = [
                {k: v for k, v in d.items() if k in ("notifier", "state", "attempts", "last_error")}
                for d in store.deliveries(row["id"])
            ]
    columns = ("id", "created_at", "kind", "dag_id", "run_id", "task_id", "message")
    emit(args, rows, rows if not args.deliveries else None, columns)
    return 0


def cmd_dags_why(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.scheduling.explain import explain_dag

    store = open_store(settings)
    facts = store.dag_facts(args.dag_id, SystemClock().now())
    reasons = explain_dag(facts)
    assets = store.asset_reasons(args.dag_id, facts.now)  # issue 15: what it waits for
    if assets:
        reasons = [r for r in reasons if r.code != "no_schedule"] + assets
    if args.json:
        emit(args, {"dag_id": args.dag_id, "reasons": [r.to_dict() for r in reasons]})
        return 0
    when = facts.expected_fire.isoformat() if facts.expected_fire else "none yet"
    print(f"{args.dag_id}: latest expected fire time {when}")
    for reason in reasons:
        print(f"  - [{reason.code}] {reason.message}")
    return 0
