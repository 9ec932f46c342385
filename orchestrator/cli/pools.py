"""``orchestrator pools ...``: named slot limits shared by every worker."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.common import (
    MAX_INT,
    Parents,
    cli_actor,
    emit,
    open_store,
    pool_name,
    whole,
)
from orchestrator.clock import SystemClock
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    pools = sub.add_parser("pools", help="pools: slot limits across workers").add_subparsers(
        dest="action", required=True
    )
    parents.add(pools, "list", "list pools with the slots in use", json_output=True)
    p = parents.add(pools, "set", "create a pool or change its size")
    p.add_argument("name", type=pool_name, metavar="NAME", help="letters, digits, '_', '-', '.'")
    p.add_argument(
        "slots",
        metavar="SLOTS",
        type=whole(0, MAX_INT),
        help="how many slots (tasks with pool_slots=1) may run at once",
    )
    p.add_argument("--description", default=None)
    p = parents.add(pools, "delete", "delete a pool (its tasks wait until it exists again)")
    p.add_argument("name")
    for choice in pools.choices.values():
        choice.set_defaults(handler=cmd_pools)


def cmd_pools(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    now = SystemClock().now()
    if args.action == "list":
        pools = [p.to_dict() for p in store.pools()]
        emit(args, pools, pools, ("name", "slots", "used", "running", "queued", "description"))
        return 0
    if args.action == "set":
        store.set_pool(args.name, args.slots, now, args.description, who=cli_actor())
        print(f"pool {args.name} has {args.slots} slot(s)")
        return 0
    store.delete_pool(args.name, now, who=cli_actor())
    print(f"pool {args.name} deleted")
    return 0
