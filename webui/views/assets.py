"""Assets (issue 15): the assets page, one asset's page, and their JSON API.

Pages: ``GET /assets`` (every asset: producers, consumers, last event) and
``GET /assets/<id>`` (its producers, consumers, recent events with the run or emitter
that made each, and the runs each triggered). API: ``GET /api/v1/assets``,
``GET /api/v1/assets/<id>``, ``GET /api/v1/assets/events`` and
``POST /api/v1/assets/events`` (``{"uri": ..., "extra": {...}}``, CSRF as every API
write; an unknown asset is 404, a bad body 400 naming the field, nothing stored).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template, request, url_for
from werkzeug.wrappers import Response

from orchestrator.errors import ConfigError

from ..current import get_store, now
from ..inputs import int_arg, json_body
from ..lineage import lineage_graph, lineage_svg
from ..security import current_actor

bp = Blueprint("assets", __name__)
MAX_LIMIT = 500


def _limit(default: int = 50) -> int:
    return min(max(int_arg("limit", default) or default, 1), MAX_LIMIT)


def _event_json(e: Any) -> dict[str, Any]:
    return {**e.to_dict(), "made_by": e.made_by}


def _asset_json(a: Any) -> dict[str, Any]:
    out = a.to_dict()
    out["producers"] = [{"dag_id": d, "task_id": t} for d, t in a.producers]
    out["consumers"] = list(a.consumers)
    return out


@bp.get("/assets")
def asset_list() -> str:
    return render_template("assets.html", assets=get_store().list_assets())


@bp.get("/assets/lineage")
def asset_lineage() -> str:
    """Producer DAGs -> assets -> consumer DAGs (issue 27 item 8), optionally only what
    is connected to the DAG ``?dag=``."""
    assets = get_store().list_assets()
    everything = lineage_graph(assets)
    dags = sorted(d["dag_id"] for _, d in everything.nodes(data=True) if d["kind"] == "dag")
    focus = _focus(dags)
    graph = lineage_graph(assets, focus) if focus else everything
    svg = lineage_svg(
        graph,
        url_for("assets.asset_detail", asset_id=0)[:-1],
        url_for("pages.dag_detail", dag_id="x")[:-1],
    )
    return render_template(
        "lineage.html", svg=svg, dags=dags, focus=focus, nodes=graph.number_of_nodes()
    )


def _focus(dags: list[str]) -> str | None:
    raw = request.args.get("dag", "")
    if not raw:
        return None
    if raw not in dags:
        raise ConfigError(
            f"query parameter 'dag': {raw[:60]!r} produces or consumes no asset "
            f"(one of: {', '.join(dags[:20]) or 'none'})"
        )
    return raw


@bp.get("/api/v1/assets/lineage")
def api_lineage() -> Response:
    """The lineage graph's nodes and edges as JSON."""
    g = lineage_graph(get_store().list_assets())
    nodes = []
    for node, data in sorted(g.nodes(data=True)):
        if data["kind"] == "dag":
            nodes.append({"id": node, "kind": "dag", "dag_id": data["dag_id"]})
        else:
            a = data["record"]
            nodes.append({"id": node, "kind": "asset", "asset_id": a.id, "uri": a.uri,
                          "last_event_at": a.last_event_at.isoformat() if a.last_event_at
                          else None})  # fmt: skip
    edges = [{"source": u, "target": v} for u, v in sorted(g.edges)]
    return jsonify({"nodes": nodes, "edges": edges})


@bp.get("/assets/<int:asset_id>")
def asset_detail(asset_id: int) -> str:
    store = get_store()
    asset = store.get_asset(asset_id)
    events = store.asset_events(asset_id, limit=_limit())
    return render_template("asset.html", asset=asset, events=events)


@bp.get("/api/v1/assets")
def api_assets() -> Response:
    return jsonify({"assets": [_asset_json(a) for a in get_store().list_assets()]})


@bp.get("/api/v1/assets/<int:asset_id>")
def api_asset(asset_id: int) -> Response:
    store = get_store()
    asset = store.get_asset(asset_id)
    events = [_event_json(e) for e in store.asset_events(asset_id, limit=_limit(20))]
    return jsonify(_asset_json(asset) | {"recent_events": events})


@bp.get("/api/v1/assets/events")
def api_events() -> Response:
    store = get_store()
    uri = request.args.get("uri") or None
    asset_id = int_arg("asset_id", None)
    key: int | str | None = asset_id if asset_id is not None else uri
    events = store.asset_events(key, limit=_limit(), run_id=request.args.get("run_id") or None)
    return jsonify({"events": [_event_json(e) for e in events]})


@bp.post("/api/v1/assets/events")
def api_emit() -> tuple[Response, int]:
    body = json_body({"uri": str, "extra": dict}, required=("uri",))
    who = current_actor("api")  # api:ada, api:ada/token:ci, api:anonymous@ADDR
    try:
        event = get_store().emit_asset_event(body["uri"], body.get("extra", {}), now(), emitter=who)
    except ConfigError as exc:  # name the field the problem is in
        field = "extra" if str(exc).startswith("extra") else "uri"
        raise ConfigError(
            f"{field}: {exc}" if not str(exc).startswith(field) else str(exc)
        ) from None
    return jsonify(
        {"event": _event_json(event), "message": f"asset event {event.id} recorded"}
    ), 201
