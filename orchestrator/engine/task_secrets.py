"""In a task process: reading variables and connections through the worker.

The task process holds no database URL and no secrets key. A lookup is one message
on the channel to its worker (``(LOOKUP, tag, pid, kind, name)``), answered by the
worker's :class:`~orchestrator.engine.secrets_chain.SecretsChain`. Every secret value
that comes back is given to the try's :class:`~orchestrator.engine.masking.Masker`
before the task sees it, so it is masked in everything the try writes from then on.
Values are remembered for the rest of the try.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.authoring.credentials import (
    Connection,
    CredentialReadError,
    CredentialSource,
    VariableValue,
    connection_from_fields,
    is_sensitive_name,
    leaf_strings,
)
from orchestrator.engine.masking import Masker
from orchestrator.errors import ConfigError

Ask = Callable[[str, str], dict[str, Any]]
# a lookup message: (LOOKUP, tag, pid, kind, name); this module stays light (no store
# import): task processes import it
LOOKUP = "orchestrator-lookup"


def is_lookup(message: Any) -> bool:
    return isinstance(message, tuple) and len(message) == 5 and message[0] == LOOKUP


def channel_asker(conn: Any, tag: Any, pid: int) -> Ask:
    """Lookups over the task process's channel to the worker (which answers in turn);
    one at a time, so threads of a task can share the channel."""
    import threading

    lock = threading.Lock()

    def ask(kind: str, name: str) -> dict[str, Any]:
        with lock:
            conn.send((LOOKUP, tag, pid, kind, name))
            reply = conn.recv()
        if not isinstance(reply, dict):
            raise ConfigError(f"the worker answered a {kind} lookup with {type(reply).__name__}")
        return reply

    return ask


def masked_source(ask: Ask, masker: Masker) -> CredentialSource:
    """A :class:`CredentialSource` whose secrets the masker learns as they arrive."""
    variables: dict[str, VariableValue | None] = {}
    connections: dict[str, Connection | None] = {}

    def variable(name: str) -> VariableValue | None:
        if name not in variables:
            reply = ask("variable", name)
            if "error" in reply:
                raise CredentialReadError(f"variable {name!r}: {reply['error']}")
            found = reply.get("found")
            value = None if found is None else VariableValue(*found)
            if value is not None and value.secret:
                masker.add(value.value)
                if value.is_json:
                    _add_json(masker, value.value)
            variables[name] = value
        return variables[name]

    def connection(name: str) -> Connection | None:
        if name not in connections:
            reply = ask("connection", name)
            if "error" in reply:
                raise CredentialReadError(f"connection {name!r}: {reply['error']}")
            found = reply.get("found")
            conn = None
            if found is not None:
                found = dict(found)
                conn = connection_from_fields(found.pop("conn_id", name), found)
                for secret in conn.secret_values():
                    masker.add(secret)
            connections[name] = conn
        return connections[name]

    return CredentialSource(variable=variable, connection=connection)


def _add_json(masker: Masker, text: str) -> None:
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return
    for leaf in leaf_strings(value):
        masker.add(leaf)


def display_source(chain: Any) -> CredentialSource:
    """For showing a rendered command (web UI): real values, secrets as ``***``."""
    import dataclasses
    import json

    from orchestrator.engine.masking import MASK

    def guarded(read: Callable[[str], Any]) -> Callable[[str], Any]:
        def call(name: str) -> Any:
            try:
                return read(name)
            except CredentialReadError:
                raise
            except Exception as exc:  # noqa: BLE001 - a backend's or the key's failure
                raise CredentialReadError(f"cannot read {name!r}: {exc}") from None

        return call

    def variable(name: str) -> VariableValue | None:
        found = chain.variable(name)
        if found is None or not found.secret:
            return found
        if found.is_json:
            try:
                return VariableValue(json.dumps(_hide(json.loads(found.value))), True, True)
            except ValueError:
                pass
        return VariableValue(MASK, False, True)

    def connection(name: str) -> Connection | None:
        found = chain.connection(name)
        if found is None:
            return None
        return dataclasses.replace(
            found, password=MASK if found.password else None, extra=_hide_sensitive(found.extra)
        )

    return CredentialSource(variable=guarded(variable), connection=guarded(connection))


def _hide_sensitive(value: Any) -> Any:
    """``value`` with what sits under a sensitive key as ``***`` (see secret_values)."""
    if isinstance(value, dict):
        return {
            k: _hide(v) if is_sensitive_name(str(k)) else _hide_sensitive(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hide_sensitive(v) for v in value]
    return value


def _hide(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _hide(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_hide(v) for v in value]
    return "***" if isinstance(value, str) else value
