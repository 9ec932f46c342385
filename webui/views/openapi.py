"""The OpenAPI 3.1 document of ``/api/v1`` (served at ``/api/v1/openapi.json``)."""

from __future__ import annotations

from typing import Any

# (method, path, summary, query params, JSON body properties)
ROUTES: list[tuple[str, str, str, tuple[str, ...], dict[str, str]]] = [
    ("get", "/dags", "DAGs with schedule in words and recent runs", ("tag", "q"), {}),
    ("get", "/dags/{dag_id}", "One DAG: params, tasks, schedule preview", (), {}),
    ("get", "/dags/{dag_id}/runs", "A page of runs, newest first", ("state", "limit", "offset"), {}),
    ("get", "/dags/{dag_id}/grid", "Latest runs x tasks", ("limit",), {}),
    ("get", "/dags/{dag_id}/summary", "Latest runs with task states counted: cheap to poll", ("limit",), {}),
    ("get", "/runs/{run_id}", "A run with its task instances and tries", (), {}),
    ("get", "/runs/{run_id}/summary", "A run's state, task states counted, tries: cheap to poll", (), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}", "A task instance: tries, results, why waiting", (), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/tries/{try_number}/log", "A try's log (tail, or from offset)", ("offset",), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/instances", "A mapped task's instances, 100 a page", ("state", "page"), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/map/{map_index}", "One instance of a mapped task", (), {}),
    ("get", "/runs/{run_id}/tasks/{task_id}/map/{map_index}/tries/{try_number}/log", "A mapped instance's try's log", ("offset",), {}),
    ("get", "/events", "The event log, newest first", ("dag_id", "run_id", "kind", "before", "limit"), {}),
    ("get", "/import-errors", "DAG files that failed to import", (), {}),
    ("get", "/csrf", "This session's CSRF token for POST requests", (), {}),
    ("post", "/dags/{dag_id}/runs", "Trigger a run", (), {"conf": "object"}),
    ("post", "/dags/{dag_id}/pause", "Pause or unpause", (), {"paused": "boolean"}),
    ("post", "/dags/{dag_id}/backfill", "Backfill a date range", (), {"start": "string", "end": "string"}),
    ("post", "/runs/{run_id}/cancel", "Cancel a run", (), {}),
    ("post", "/runs/{run_id}/tasks/{task_id}/clear", "Clear a task (or one instance: map_index)", (), {"downstream": "boolean", "map_index": "integer"}),
    ("post", "/runs/{run_id}/tasks/{task_id}/mark", "Mark a task success or failed", (), {"state": "string"}),
]  # fmt: skip

# JSON body fields that must be present (webui.inputs.json_body refuses a body without)
REQUIRED: dict[str, list[str]] = {
    "/dags/{dag_id}/pause": ["paused"],
    "/dags/{dag_id}/backfill": ["start", "end"],
    "/runs/{run_id}/tasks/{task_id}/mark": ["state"],
}

ERROR = {
    "description": "Error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def _operation(method: str, path: str, summary: str, query: tuple, body: dict) -> dict[str, Any]:
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
            "4XX": ERROR,
        },
    }
    if method == "post":
        op["parameters"].append(
            {"name": "X-CSRF-Token", "in": "header", "required": True, "schema": {"type": "string"}}
        )
        schema = {
            "type": "object",
            "properties": {k: {"type": v} for k, v in body.items()},
            "required": REQUIRED.get(path, []),
            "additionalProperties": False,
        }
        op["requestBody"] = {"content": {"application/json": {"schema": schema}}}
    return op


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for method, path, summary, query, body in ROUTES:
        paths.setdefault(path, {})[method] = _operation(method, path, summary, query, body)
    return {
        "openapi": "3.1.0",
        "info": {"title": "orchestrator web UI API", "version": "1"},
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "status": {"type": "integer"},
                        "title": {"type": "string"},
                        "detail": {"type": "string"},
                    },
                }
            }
        },
    }
