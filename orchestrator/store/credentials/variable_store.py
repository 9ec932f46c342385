"""Variables: named text or JSON values, with a description; secret ones encrypted.

A variable is secret when marked so (``--secret``) or named like a secret
(:func:`~orchestrator.authoring.credentials.is_sensitive_name`: ``*password*``,
``*token*``, ...): its value is stored as a Fernet token (:mod:`.secret_box`) and
masked wherever a task reads it. Lists never decrypt.

>>> store.set_variable("region", "emea", now, box)            # doctest: +SKIP
>>> store.get_variable("region", box).value                   # doctest: +SKIP
'emea'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from orchestrator.authoring.credentials import check_name, is_sensitive_name
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.credentials.secret_box import SecretBox

HIDDEN = "***"


@dataclass(frozen=True)
class VariableRecord:
    key: str
    value: str  # "***" in lists for a secret variable
    is_json: bool
    is_secret: bool
    description: str | None
    updated_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "is_json": self.is_json,
            "is_secret": self.is_secret,
            "description": self.description,
            "updated_at": self.updated_at,
        }


def check_value(name: str, value: Any, is_json: bool) -> str:
    """The text stored for ``value``; ConfigError if it is not text or not JSON."""
    if not isinstance(value, str):
        raise ConfigError(f"variable {name!r}: the value must be text")
    if "\x00" in value:
        raise ConfigError(f"variable {name!r}: the value contains a NUL byte")
    if is_json:
        try:
            json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"variable {name!r}: --json value is not JSON ({exc.msg} at column {exc.colno})"
            ) from None
    return value


class VariableStore(StoreBase):
    def set_variable(
        self,
        name: str,
        value: str,
        now: datetime,
        box: SecretBox,
        *,
        is_json: bool = False,
        description: str | None = None,
        secret: bool = False,
    ) -> VariableRecord:
        """Create or replace variable ``name``; nothing is stored if anything is wrong."""
        with self.write() as conn:
            return _put(conn, name, value, now, box, is_json, description, secret, True)

    def import_variables(
        self, items: list[dict[str, Any]], now: datetime, box: SecretBox, *, overwrite: bool
    ) -> int:
        """Store every item (``key``, ``value``, ``is_json``, ``description``,
        ``is_secret``) in one transaction: all or none."""
        for item in items:  # every check before the first write
            check_name(item["key"], "variable")
            check_value(item["key"], item["value"], item.get("is_json", False))
        with self.write() as conn:
            for item in items:
                _put(
                    conn,
                    item["key"],
                    item["value"],
                    now,
                    box,
                    item.get("is_json", False),
                    item.get("description"),
                    item.get("is_secret", False),
                    overwrite,
                )
        return len(items)

    def get_variable(self, name: str, box: SecretBox | None) -> VariableRecord | None:
        """The variable with its value (decrypted with ``box``), or None."""
        with self.read() as conn:
            row = conn.execute(select(m.variables).where(m.variables.c.key == name)).first()
        return None if row is None else _record(row, box)

    def list_variables(self) -> list[VariableRecord]:
        """Every variable, secret values shown as ``***`` (nothing is decrypted)."""
        with self.read() as conn:
            rows = conn.execute(select(m.variables).order_by(m.variables.c.key)).all()
        return [_record(r, None) for r in rows]

    def export_variables(self, box: SecretBox) -> list[VariableRecord]:
        with self.read() as conn:
            rows = conn.execute(select(m.variables).order_by(m.variables.c.key)).all()
        return [_record(r, box) for r in rows]

    def delete_variable(self, name: str, now: datetime) -> None:
        with self.write() as conn:
            done = conn.execute(delete(m.variables).where(m.variables.c.key == name)).rowcount
            if not done:
                raise NotFoundError(f"no variable {name!r}")
            record_event(conn, now, "variable_deleted", f"variable {name} deleted")


def _put(
    conn: Connection,
    name: str,
    value: str,
    now: datetime,
    box: SecretBox,
    is_json: bool,
    description: str | None,
    secret: bool,
    overwrite: bool,
) -> VariableRecord:
    check_name(name, "variable")
    check_value(name, value, is_json)
    if description is not None and not isinstance(description, str):
        raise ConfigError(f"variable {name!r}: the description must be text")
    secret = bool(secret) or is_sensitive_name(name)
    values = {
        "val": box.encrypt(value) if secret else value,
        "is_json": bool(is_json),
        "is_secret": secret,
        "is_encrypted": secret,
        "description": description,
        "updated_at": now,
    }
    exists = conn.execute(select(m.variables.c.id).where(m.variables.c.key == name)).first()
    if exists is not None and not overwrite:
        raise ConfigError(f"variable {name!r} exists already")
    if exists is not None:
        conn.execute(update(m.variables).where(m.variables.c.id == exists[0]).values(**values))
    else:
        conn.execute(insert(m.variables).values(key=name, **values))
    record_event(conn, now, "variable_set", f"variable {name} set")
    shown = HIDDEN if secret else value
    return VariableRecord(name, shown, bool(is_json), secret, description, now)


def _record(row: Any, box: SecretBox | None) -> VariableRecord:
    value = row.val
    if row.is_encrypted:
        value = box.decrypt(value, f"variable {row.key!r}") if box is not None else HIDDEN
    elif row.is_secret and box is None:
        value = HIDDEN
    return VariableRecord(
        row.key, value, row.is_json, row.is_secret, row.description, row.updated_at
    )


def rotate_variables(conn: Connection, box: SecretBox) -> int:
    """Encrypt every encrypted variable again with the box's first key."""
    rows = conn.execute(
        select(m.variables.c.id, m.variables.c.key, m.variables.c.val).where(
            m.variables.c.is_encrypted.is_(True)
        )
    ).all()
    for row in rows:
        token = box.rotate(row.val, f"variable {row.key!r}")
        conn.execute(update(m.variables).where(m.variables.c.id == row.id).values(val=token))
    return len(rows)
