"""The worker's side of ``ti.xcom_pull`` / ``ti.xcom_push`` / ``ctx.result`` (issue 25).

A try asks over its channel like a variable lookup (engine/task_secrets.py): the
message ``(LOOKUP, (ti_id, try_number), pid, kind, request)`` with ``kind`` one of
:data:`RESULT_KINDS` and ``request`` a JSON object; the worker answers from its store
(store/tasks/xcoms.py) with ``{"found": json_text}`` or ``{"error": ...}``. Only a try
that pulls or pushes sends one: nothing is read for the others.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from orchestrator.errors import OrchestratorError

log = logging.getLogger(__name__)
PULL, PUSH = "xcom_pull", "xcom_push"
SET_VARIABLE = "variable_set"  # issue 26: Airflow's Variable.set from a try
EXTERNAL = "external_state"  # issue 26: ExternalTaskSensor(execution_date_fn=...)'s pokes
RESULT_KINDS = frozenset({PULL, PUSH, SET_VARIABLE, EXTERNAL})


def external_answer(store: Any, asked: dict[str, Any]) -> dict[str, Any]:
    """``"run_id\nstate"`` of DAG ``dag_id``'s run at ``logical_date`` (or of its task
    ``task_id`` there), or None when there is no such run yet."""
    when = datetime.fromisoformat(str(asked["logical_date"]))
    if when.tzinfo is None:
        raise OrchestratorError("external_state: logical_date needs a UTC offset")
    task_id = asked.get("task_id")
    found = store.external_state(
        str(asked["dag_id"]), when, None if task_id is None else str(task_id)
    )
    return {"found": None if found is None else f"{found[0]}\n{found[1]}"}


def answer_results(
    store: Any, max_result_bytes: int, message: tuple, set_variable: Any = None
) -> dict[str, Any]:
    """The reply to a results lookup; never raises. ``set_variable(key, value, is_json,
    description)`` stores a variable a try sets (None: refused)."""
    _, tag, _pid, kind, request = message
    try:
        ti_id, try_number = tag
        asked = json.loads(request)
        if kind == SET_VARIABLE:
            if set_variable is None:
                raise OrchestratorError("variables cannot be set from here")
            value = asked["value"]
            if not isinstance(value, str) or len(value.encode()) > max_result_bytes:
                raise OrchestratorError(
                    f"Variable.set {asked['key']!r}: the value is over the "
                    f"{max_result_bytes}-byte limit (max_result_bytes)"
                )
            set_variable(
                str(asked["key"]), value, bool(asked.get("is_json")), asked.get("description")
            )
            log.info("variable_set key=%s by ti=%s try=%s", asked["key"], ti_id, try_number)
            return {"found": None}
        if kind == PULL:
            found = store.pull_result(
                ti_id, str(asked["task_id"]), str(asked["key"]), asked.get("map_indexes")
            )
            return {"found": found}
        if kind == EXTERNAL:
            return external_answer(store, asked)
        value = asked["value"]
        if not isinstance(value, str) or len(value.encode()) > max_result_bytes:
            raise OrchestratorError(
                f"xcom_push {asked['key']!r}: the value is over the {max_result_bytes}-byte "
                "limit (max_result_bytes)"
            )
        store.push_xcom(ti_id, try_number, str(asked["key"]), value)
        return {"found": None}
    except OrchestratorError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a malformed request or the database's failure
        log.warning("%s lookup %r failed: %s", kind, request, exc)
        return {"error": f"cannot {kind.replace('_', ' ')}: {type(exc).__name__}: {exc}"}


def tasks_test_asker(store: Any, run_id: str | None, task_id: str, log: logging.Logger) -> Any:
    """``tasks test``'s answers: pulls read the results of the stored run ``run_id``
    (``--from-run``; without it there is none to read); pushes are written to the log,
    never stored (``tasks test`` records nothing)."""

    def ask(kind: str, request: str) -> dict[str, Any]:
        asked = json.loads(request)
        if kind == PUSH:
            log.info("xcom_push %s = %s (tasks test stores nothing)", asked["key"], asked["value"])
            return {"found": None}
        if kind == SET_VARIABLE:
            log.info("Variable.set %s (tasks test stores nothing)", asked["key"])
            return {"found": None}
        if kind == EXTERNAL:
            if store is None:
                return {"error": "tasks test has no store to read other DAGs' runs from"}
            try:
                return external_answer(store, asked)
            except (OrchestratorError, ValueError) as exc:
                return {"error": str(exc)}
        if run_id is None or store is None:
            return {"error": "tasks test reads results of other tasks with --from-run RUN_ID"}
        try:
            here = store.task_instance(run_id, task_id)
            found = store.pull_result(
                here.id, str(asked["task_id"]), str(asked["key"]), asked.get("map_indexes")
            )
        except OrchestratorError as exc:
            return {"error": f"in run {run_id!r}: {exc}"}
        return {"found": found}

    return ask


def pull_asker(store: Any, ti_id: int) -> Any:
    """Pulls for templates the worker renders itself (built-in sensors' arguments): the
    results of instance ``ti_id``'s run, straight from ``store``; a push is refused."""

    def ask(kind: str, request: str) -> dict[str, Any]:
        if kind != PULL:
            return {"error": "a built-in sensor pushes and sets nothing"}
        asked = json.loads(request)
        try:
            found = store.pull_result(
                ti_id, str(asked["task_id"]), str(asked["key"]), asked.get("map_indexes")
            )
        except OrchestratorError as exc:
            return {"error": str(exc)}
        return {"found": found}

    return ask
