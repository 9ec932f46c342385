"""Airflow's ``Variable``, ``Connection`` and ``BaseHook.get_connection`` over our
credentials (:mod:`orchestrator.authoring.credentials`), read in a try from the worker's
chain (environment, database, secrets backend) and masked in the try's log::

    from orchestrator.airflow import BaseHook, Variable, task

    @task
    def load():
        limits = Variable.get("limits", default={"max": 10}, deserialize_json=True)
        warehouse = BaseHook.get_connection("warehouse")
        return {"host": warehouse.host, "max": limits["max"]}

DAG files parse without credentials here: ``Variable.get`` at the top level of a file
(outside a task) is an import error saying to move it into a task or a template
(``{{ var.value.x }}``). ``Variable.set`` / ``delete`` are refused: a try reads
credentials, it does not write them (``orchestrator variables set``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from orchestrator.authoring.context_names import current_try
from orchestrator.authoring.credentials import Connection as _Connection
from orchestrator.authoring.where import definition_error

__all__ = ["BaseHook", "Connection", "Variable"]

_MISSING = object()


def _context(what: str) -> Any:
    found = current_try()
    if found is None:
        raise definition_error(
            f"{what} is called outside a task: DAG files parse without credentials here; "
            "call it inside a task's function, or use a template "
            "({{ var.value.name }}, {{ conn.name.host }})"
        )
    return found[0]


def _as_airflow_reads_it(conn: _Connection) -> _Connection:
    """The connection with the ``conn_type`` Airflow gives a URI's scheme: a
    ``postgresql://`` URI is ``conn_type="postgres"``, a ``-`` in the scheme is ``_``
    (``google-cloud-platform://`` -> ``google_cloud_platform``), as Airflow's
    ``Connection`` parses ``AIRFLOW_CONN_*`` URIs; what code compares it with."""
    kind = "postgres" if conn.conn_type == "postgresql" else conn.conn_type.replace("-", "_")
    return conn if kind == conn.conn_type else dataclasses.replace(conn, conn_type=kind)


class Variable:
    """Airflow's ``Variable.get(key, default=..., deserialize_json=...)`` in a task.

    >>> Variable.get("region", default="eu")       # doctest: +SKIP
    """

    @staticmethod
    def get(
        key: str, default: Any = _MISSING, deserialize_json: bool = False, **legacy: Any
    ) -> Any:
        """Variable ``key`` (parsed as JSON with ``deserialize_json``); ``default`` when
        it exists nowhere, else an error naming it. ``default_var=`` (Airflow 2) too."""
        if "default_var" in legacy:
            default = legacy.pop("default_var")
        if legacy:
            raise TypeError(f"Variable.get() got unexpected arguments {sorted(legacy)}")
        ctx = _context(f"Variable.get({key!r})")
        if default is _MISSING:
            return ctx.variable(key, deserialize_json=deserialize_json)
        return ctx.variable(key, default=default, deserialize_json=deserialize_json)

    @staticmethod
    def set(
        key: str, value: Any, description: str | None = None, serialize_json: bool = False
    ) -> None:
        """Create or replace variable ``key`` from a task (a string, or any JSON value
        with ``serialize_json``); the worker stores it. Outside a task: an error."""
        _context(f"Variable.set({key!r})").set_variable(
            key, value, serialize_json=serialize_json, description=description
        )

    @staticmethod
    def delete(key: str, *args: Any, **kwargs: Any) -> None:
        """Refused here, as :meth:`set`."""
        raise NotImplementedError(
            f"Variable.delete({key!r}) is not supported here: use 'orchestrator variables "
            "delete' or the UI"
        )


class Connection(_Connection):
    """Airflow's ``Connection`` (``conn_id``, ``conn_type``, ``host``, ``login``,
    ``password``, ``port``, ``schema``, ``extra``); ``Connection.get(conn_id)`` in a task
    reads one.

    >>> Connection(conn_id="w", conn_type="postgres", host="db").host    # doctest: +SKIP
    'db'
    """

    @classmethod
    def get(cls, conn_id: str) -> _Connection:
        """Connection ``conn_id`` of the worker's chain (in a task)."""
        return _as_airflow_reads_it(_context(f"Connection.get({conn_id!r})").connection(conn_id))


class BaseHook:
    """Airflow's ``BaseHook``: ``BaseHook.get_connection(conn_id)`` in a task.

    >>> BaseHook.get_connection("warehouse").host     # doctest: +SKIP
    """

    @classmethod
    def get_connection(cls, conn_id: str) -> _Connection:
        """Connection ``conn_id``: its password and extra are masked in the try's log."""
        ctx = _context(f"BaseHook.get_connection({conn_id!r})")
        return _as_airflow_reads_it(ctx.connection(conn_id))
