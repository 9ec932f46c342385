"""Where a variable or connection comes from: the chain of secrets backends.

Asked in order, the first that knows the name wins (Airflow's order):

1. the environment of the worker: ``ORCHESTRATOR_VAR_<NAME>`` (the value) and
   ``ORCHESTRATOR_CONN_<NAME>`` (a URI), ``<NAME>`` upper-cased;
2. the metadata database (``orchestrator variables`` / ``connections``);
3. the backend of the setting ``secrets_backend`` (``module:Class``), built once as
   ``Class(**secrets_backend_kwargs)``.

A backend is any object with two methods (see docs/secrets.md)::

    get_variable(name: str) -> str | None
    get_connection(name: str) -> str | Connection | dict | None   # a URI, or fields

Lookups run in the worker (task processes inherit no ``ORCHESTRATOR_*`` variable and
no database URL): the task process asks its worker over its channel (:func:`answer`).

>>> chain = SecretsChain(store, settings)          # doctest: +SKIP
>>> chain.variable("region").value                 # doctest: +SKIP
'emea'
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from orchestrator.authoring.credentials import (
    Connection,
    VariableValue,
    connection_from_fields,
    is_sensitive_name,
)
from orchestrator.engine.task_secrets import LOOKUP, Ask, is_lookup
from orchestrator.engine.xcom_lookup import RESULT_KINDS
from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.store.credentials.secret_box import box_of

log = logging.getLogger(__name__)

VAR_PREFIX = "ORCHESTRATOR_VAR_"
CONN_PREFIX = "ORCHESTRATOR_CONN_"


def load_backend(spec: str | None, kwargs: str | None) -> Any:
    """The object of the setting ``secrets_backend``; ConfigError naming what is wrong."""
    if not spec:
        return None
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise ConfigError(f"secrets_backend: expected module:Class, got {spec!r}")
    try:
        params = json.loads(kwargs) if kwargs else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"secrets_backend_kwargs: not JSON ({exc.msg})") from None
    if not isinstance(params, dict):
        raise ConfigError("secrets_backend_kwargs: expected a JSON object")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"secrets_backend {spec!r}: cannot import it: {exc}") from None
    try:
        backend = cls(**params)
    except Exception as exc:  # noqa: BLE001 - the user's class
        raise ConfigError(f"secrets_backend {spec!r}: cannot create it: {exc}") from None
    for method in ("get_variable", "get_connection"):
        if not callable(getattr(backend, method, None)):
            raise ConfigError(f"secrets_backend {spec!r}: it has no {method}(name) method")
    return backend


def _as_connection(name: str, found: Any, where: str) -> Connection:
    try:
        if isinstance(found, Connection):
            return found
        if isinstance(found, str):
            return Connection.from_uri(name, found.strip())
        if isinstance(found, dict):
            return connection_from_fields(name, found)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    raise ConfigError(f"{where}: connection {name!r} is a {type(found).__name__}, not a URI")


class SecretsChain:
    """Environment, then database, then the configured backend."""

    def __init__(self, store: Any, settings: Any, environ: Mapping[str, str] | None = None):
        self.store = store
        self.settings = settings
        self.environ = os.environ if environ is None else environ
        self._backend: Any = None
        self._backend_loaded = False

    @property
    def backend(self) -> Any:
        if not self._backend_loaded:
            self._backend = load_backend(
                self.settings.secrets_backend, self.settings.secrets_backend_kwargs
            )
            self._backend_loaded = True
        return self._backend

    def variable(self, name: str) -> VariableValue | None:
        sensitive = is_sensitive_name(name)
        env = self.environ.get(VAR_PREFIX + name.upper())
        if env is not None:
            return VariableValue(env, secret=sensitive)
        if self.store is not None:
            row = self.store.get_variable(name, box_of(self.settings))
            if row is not None:
                return VariableValue(row.value, row.is_json, row.is_secret)
        if self.backend is not None:
            found = self.backend.get_variable(name)
            if found is not None:
                # a secrets manager holds secrets: masked whatever the name
                return VariableValue(str(found), secret=True)
        return None

    def connection(self, name: str) -> Connection | None:
        env = self.environ.get(CONN_PREFIX + name.upper())
        if env is not None:
            return _as_connection(name, env, CONN_PREFIX + name.upper())
        if self.store is not None:
            found = self.store.get_connection(name, box_of(self.settings))
            if found is not None:
                return found
        if self.backend is not None:
            found = self.backend.get_connection(name)
            if found is not None:
                return _as_connection(name, found, f"secrets_backend {name!r}")
        return None


def check_key(store: Any, settings: Any) -> None:
    """Refuse to start (a clear ConfigError) when the secrets key cannot decrypt what is
    stored, or the secrets backend setting is wrong; makes the key file on first use."""
    store.check_secrets_key(box_of(settings))
    load_backend(settings.secrets_backend, settings.secrets_backend_kwargs)


# -- the task process asks, the worker answers ---------------------------------------------
def answer(chain: SecretsChain | None, message: tuple) -> dict[str, Any]:
    """The worker's reply to a task process's lookup ``(LOOKUP, tag, pid, kind, name)``:
    ``{"found": ...}`` or ``{"error": ...}``; never raises."""
    _, _tag, _pid, kind, name = message
    try:
        if chain is None:
            raise ConfigError("this worker reads no variables or connections")
        if not isinstance(name, str) or kind not in ("variable", "connection"):
            raise ConfigError(f"bad lookup {kind!r} {name!r}")
        if kind == "variable":
            var = chain.variable(name)
            found: Any = None if var is None else [var.value, var.is_json, var.secret]
        else:
            conn = chain.connection(name)
            found = None if conn is None else conn.fields() | {"conn_id": conn.conn_id}
        return {"found": found}
    except OrchestratorError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a backend's or the database's failure
        log.warning("lookup of %s %r failed: %s", kind, name, exc)
        return {"error": f"cannot read {kind} {name!r}: {type(exc).__name__}: {exc}"}


def answer_lookup(
    chain: SecretsChain | None, channel: Any, message: Any, tag: Any, results: Any = None
) -> bool:
    """If ``message`` is a lookup of the try ``tag``, send the answer on ``channel`` and
    return True (the try goes on); False for anything else (an outcome). ``results``
    answers the lookups of task results (``(kind, message) -> reply``; issue 25)."""
    if not is_lookup(message) or message[1] != tag:
        return False
    if message[3] in RESULT_KINDS:
        reply = results(message) if results is not None else {"error": "no results here"}
    else:
        reply = answer(chain, message)
    with contextlib.suppress(BrokenPipeError, OSError):  # died: its sentinel tells
        channel.send(reply)
    return True


def chain_asker(chain: SecretsChain) -> Ask:
    """Lookups straight from a chain (``tasks test``: the try runs in this process)."""
    return lambda kind, name: answer(chain, (LOOKUP, None, None, kind, name))
