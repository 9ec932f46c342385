"""``orchestrator assets list|show|events|emit``: assets and their events (issue 15).

``emit`` records an external event for a known asset (one a DAG file names in
``outlets`` or a schedule); an unknown URI is refused with the reason, nothing stored.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.common import Parents, cli_actor, emit, open_store, parse_json_object, whole
from orchestrator.clock import SystemClock
from orchestrator.settings import Settings

_EVENT_COLUMNS = ("id", "at", "uri", "made_by", "extra", "triggered_runs")


def register(sub: Any, parents: Parents) -> None:
    assets = sub.add_parser("assets", help="assets and asset events").add_subparsers(
        dest="action", required=True
    )
    parents.add(assets, "list", "list assets with their producers and consumers", json_output=True)
    p = parents.add(
        assets, "show", "one asset: producers, consumers, recent events", json_output=True
    )
    p.add_argument("asset", metavar="URI_OR_ID")
    p.add_argument("--limit", type=whole(1, 10_000), default=20, help="events to show")
    p = parents.add(assets, "events", "asset events, newest first", json_output=True)
    p.add_argument("asset", metavar="URI_OR_ID", nargs="?", default=None)
    p.add_argument("--run", dest="run_id", default=None, help="only the events RUN_ID consumed")
    p.add_argument("--limit", type=whole(1, 10_000), default=50)
    p = parents.add(assets, "emit", "record an external event for a known asset", json_output=True)
    p.add_argument("uri", metavar="URI")
    p.add_argument("--extra", default=None, metavar="JSON", help="metadata, e.g. '{\"rows\": 3}'")
    for choice in assets.choices.values():
        choice.set_defaults(handler=cmd_assets)


def _key(text: str | None) -> int | str | None:
    return int(text) if text is not None and text.isdigit() else text


def _event_row(e: Any) -> dict[str, Any]:
    return {**e.to_dict(), "made_by": e.made_by}


def cmd_assets(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    if args.action == "list":
        rows = [a.to_dict() for a in store.list_assets()]
        table = [
            {**r, "producers": ", ".join(f"{d}.{t}" for d, t in r["producers"]) or None,
             "consumers": ", ".join(r["consumers"]) or None}
            for r in rows
        ]  # fmt: skip
        columns = (
            "id",
            "uri",
            "name",
            "group",
            "producers",
            "consumers",
            "events",
            "last_event_at",
        )
        emit(args, rows, table, columns)
        return 0
    if args.action == "show":
        asset = store.get_asset(_key(args.asset))
        events = [_event_row(e) for e in store.asset_events(asset.id, limit=args.limit)]
        data = {**asset.to_dict(), "recent_events": events}
        if args.json:
            emit(args, data)
            return 0
        print(f"asset {asset.uri} (id {asset.id}, name {asset.name}, group {asset.group or '-'})")
        print("producers: " + (", ".join(f"{d}.{t}" for d, t in asset.producers) or "none"))
        print("consumers: " + (", ".join(asset.consumers) or "none"))
        print(f"events: {asset.events}")
        emit(args, events, events, _EVENT_COLUMNS)
        return 0
    if args.action == "events":
        found = store.asset_events(_key(args.asset), limit=args.limit, run_id=args.run_id)
        events = [_event_row(e) for e in found]
        emit(args, events, events, _EVENT_COLUMNS)
        return 0
    extra = parse_json_object(args.extra, "--extra")
    event = store.emit_asset_event(args.uri, extra, SystemClock().now(), emitter=cli_actor())
    consumers = store.get_asset(event.asset_id).consumers
    if args.json:
        emit(args, _event_row(event))
        return 0
    print(
        f"asset event {event.id} recorded for {event.uri}; "
        f"queued for: {', '.join(consumers) or 'no DAG (none is scheduled on it)'}"
    )
    return 0
