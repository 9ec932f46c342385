"""The OpenAPI 3.1 document of ``/api/v1`` (served at ``/api/v1/openapi.json``)."""

from __future__ import annotations

import re
from typing import Any

from ..roles import least_role

# (method, path, summary, query params, JSON body properties)
ROUTES: list[tuple[str, str, str, tuple[str, ...], dict[str, str]]] = [
    ("get", "/dags", "DAGs with schedule in words and recent runs; state, tag, q filter, sort/order sort, page/per_page page (unpaged without them)", ("state", "tag", "q", "sort", "order", "page", "per_page"), {}),
    ("get", "/dags/{dag_id}", "One DAG: params, tasks, schedule preview", (), {}),
    ("get", "/dags/{dag_id}/runs", "A page of runs, newest first", ("state", "limit", "offset"), {}),
    ("get", "/dags/{dag_id}/grid", "Latest runs x tasks; run_state, run_type filter the runs", ("limit", "run_state", "run_type"), {}),
    ("get", "/dags/{dag_id}/summary", "Latest runs with task states counted: cheap to poll", ("limit",), {}),
    ("get", "/dags/{dag_id}/calendar", "A year of the DAG's runs counted by state per day of its timezone", ("year",), {}),
    ("get", "/runs/{run_id}", "A run with its task instances and tries", (), {}),
    ("get", "/runs/{run_id}/summary", "A run's state, task states counted, tries: cheap to poll", (), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}", "A task instance: tries, results, why waiting", (), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/tries/{try_number}/log", "A try's log (tail, or from offset); format=html: a page of numbered lines (offset, before, line); q: the matching lines of the whole log", ("offset", "before", "line", "format", "q"), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/instances", "A mapped task's instances, 100 a page", ("state", "page"), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/map/{map_index}", "One instance of a mapped task", (), {}),
    ("get", "/runs/{run_id}/groups/{group}/instances", "A mapped task group's instances, 100 a page: each one's tasks' states and names", ("page",), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/map/{map_index}/tries/{try_number}/log", "A mapped instance's try's log (as above)", ("offset", "before", "line", "format", "q"), {}),
    ("get", "/events", "The event log, newest first", ("dag_id", "run_id", "kind", "actor", "before", "limit"), {}),
    ("get", "/import-errors", "DAG files that failed to import", (), {}),
    # issue 17: DAG versions (ref: a version number, 'current' or a hash prefix)
    ("get", "/dags/{dag_id}/versions", "A DAG's stored versions, oldest first", (), {}),
    ("get", "/dags/{dag_id}/versions/{ref}", "One version: its file and what changed from the one before", (), {}),
    ("get", "/dags/{dag_id}/versions/{a}/diff/{b}", "What changed from version a to b: definition and file diff", (), {}),
    ("get", "/csrf", "This session's CSRF token for POST requests", (), {}),
    ("get", "/me", "The caller: user, role, and whether a token or a session speaks", (), {}),
    ("get", "/users", "Users, their roles and tokens (no secrets); admin", (), {}),
    ("post", "/dags/{dag_id}/runs", "Trigger a run (logical_date: ISO 8601 with offset)", (), {"conf": "object", "logical_date": "string"}),
    ("post", "/dags/{dag_id}/pause", "Pause or unpause", (), {"paused": "boolean"}),
    ("post", "/dags/{dag_id}/backfill", "Backfill a date range", (), {"start": "string", "end": "string", "conf": "object"}),
    ("post", "/runs/{run_id}/cancel", "Cancel a run", (), {}),
    ("post", "/runs/{run_id}/tasks/{task_id}/clear", "Clear a task (or one instance: map_index)", (), {"downstream": "boolean", "map_index": "integer"}),
    ("post", "/runs/{run_id}/tasks/{task_id}/mark", "Mark a task success or failed", (), {"state": "string"}),
    # issue 16: variables and connections (secrets as ***)
    ("get", "/variables", "Variables; secret values as ***", (), {}),
    ("post", "/variables", "Set a variable", (), {"key": "string", "value": "string", "is_json": "boolean", "description": "string", "is_secret": "boolean"}),
    ("post", "/variables/{key}/delete", "Delete a variable", (), {}),
    ("get", "/connections", "Connections; passwords and extras as ***", (), {}),
    ("post", "/connections", "Add (or with replace, save over) a connection from uri or fields", (), {"conn_id": "string", "uri": "string", "conn_type": "string", "host": "string", "login": "string", "password": "string", "port": "integer", "schema": "string", "extra": "object", "description": "string", "replace": "boolean"}),
    ("post", "/connections/{conn_id}/delete", "Delete a connection", (), {}),
    # issue 15: assets
    ("get", "/assets", "Assets with their producers, consumers and last event", (), {}),
    ("get", "/assets/{asset_id}", "One asset and its recent events", ("limit",), {}),
    ("get", "/assets/lineage", "The lineage graph: producer DAGs, assets, consumer DAGs", (), {}),
    ("get", "/assets/events", "Asset events, newest first", ("uri", "asset_id", "run_id", "limit"), {}),
    ("post", "/assets/events", "Emit an external event for a known asset", (), {"uri": "string", "extra": "object"}),
    # issue 30: asset watchers and deferred tasks
    ("get", "/watchers", "Asset watchers: connection state, last message, messages and rejects", (), {}),
    ("get", "/deferred", "Deferred task instances with their triggers, and the triggerers", (), {}),
]  # fmt: skip

# JSON body fields that must be present (webui.inputs.json_body refuses a body without)
REQUIRED: dict[str, list[str]] = {
    "/dags/{dag_id}/pause": ["paused"],
    "/dags/{dag_id}/backfill": ["start", "end"],
    "/runs/{run_id}/tasks/{task_id}/mark": ["state"],
    "/variables": ["key", "value"],
    "/connections": ["conn_id"],
    "/assets/events": ["uri"],
}

ERROR = {
    "description": "Error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def endpoints_of(url_map: Any) -> dict[tuple[str, str], str]:
    """(method, OpenAPI path under /api/v1) -> endpoint, from a Flask app's url_map."""
    out = {}
    for rule in url_map.iter_rules():
        if rule.rule.startswith("/api/v1/"):
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule[len("/api/v1") :])
            for method in rule.methods - {"HEAD", "OPTIONS"}:
                out[(method.lower(), path)] = rule.endpoint
    return out


def _operation(
    method: str, path: str, summary: str, query: tuple, body: dict, endpoint: str | None
) -> dict[str, Any]:
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in (part[1:-1] for part in path.split("/") if part.startswith("{"))
    ]
    params += [
        {"name": q, "in": "query", "required": False, "schema": {"type": "string"}} for q in query
    ]
    op: dict[str, Any] = {
        "summary": summary,
        "operationId": f"{method}_{path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
        "parameters": params,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {}}},
            "401": ERROR | {"description": "No login, or an unknown/expired/revoked token"},
            "403": ERROR | {"description": "The caller's role is below the route's"},
            "4XX": ERROR,
        },
        # the route's entry in webui/roles.py ROUTE_ROLES: who may call it
        "x-least-role": (least_role(endpoint) if endpoint else None) or "unknown",
    }
    if method == "post":
        op["parameters"].append(
            {
                "name": "X-CSRF-Token",
                "in": "header",
                "required": False,
                "description": "required with a session cookie; not with a bearer token",
                "schema": {"type": "string"},
            }
        )
        schema = {
            "type": "object",
            "properties": {k: {"type": v} for k, v in body.items()},
            "required": REQUIRED.get(path, []),
            "additionalProperties": False,
        }
        op["requestBody"] = {"content": {"application/json": {"schema": schema}}}
    return op


def document(endpoints: dict[tuple[str, str], str] | None = None) -> dict[str, Any]:
    """The document; ``endpoints`` (:func:`endpoints_of` the app's url_map) gives each
    operation its least role."""
    paths: dict[str, dict[str, Any]] = {}
    for method, path, summary, query, body in ROUTES:
        endpoint = (endpoints or {}).get((method, path))
        paths.setdefault(path, {})[method] = _operation(
            method, path, summary, query, body, endpoint
        )
    return {
        "openapi": "3.1.0",
        "info": {"title": "orchestrator web UI API", "version": "1"},
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        # either: a bearer API token (orchestrator users token NAME), or the session
        # cookie of a signed-in browser (whose POSTs carry X-CSRF-Token)
        "security": [{"bearerAuth": []}, {"sessionCookie": []}],
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "orc_<token_id>_<secret>",
                    "description": "An API token; acts with the token's role, no CSRF token",
                },
                "sessionCookie": {"type": "apiKey", "in": "cookie", "name": "session"},
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "status": {"type": "integer"},
                        "title": {"type": "string"},
                        "detail": {"type": "string"},
                    },
                }
            },
        },
    }
