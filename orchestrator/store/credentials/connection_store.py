"""Connections: where and how tasks reach other systems; password and extra encrypted.

The password and the extra (a JSON object) are stored as Fernet tokens
(:mod:`.secret_box`); the other fields as text. Lists never decrypt: the password and
the extra show as ``***``.

>>> store.add_connection(Connection.from_uri("db", "postgresql://u:pw@h/db"), now, box)  # doctest: +SKIP
>>> store.get_connection("db", box).password                                           # doctest: +SKIP
'pw'
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection as SqlConnection
from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from orchestrator.authoring.credentials import Connection
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.credentials.secret_box import SecretBox

HIDDEN = "***"
_c = m.connections.c


class ConnectionStore(StoreBase):
    def add_connection(self, conn: Connection, now: datetime, box: SecretBox) -> None:
        """Store a new connection; ConfigError (nothing stored) if the name is taken."""
        self.import_connections([conn], now, box, overwrite=False)

    def import_connections(
        self, conns: list[Connection], now: datetime, box: SecretBox, *, overwrite: bool
    ) -> int:
        """Store every connection in one transaction: all or none."""
        try:
            with self.write() as db:
                for conn in conns:
                    _put(db, conn, now, box, overwrite)
        except IntegrityError:
            raise ConfigError("a connection of that name exists already") from None
        return len(conns)

    def get_connection(self, conn_id: str, box: SecretBox) -> Connection | None:
        with self.read() as db:
            row = db.execute(select(m.connections).where(_c.conn_id == conn_id)).first()
        return None if row is None else _decrypted(row, box)

    def list_connections(self) -> list[dict[str, Any]]:
        """Every connection's fields; password and extra as ``***`` (never decrypted)."""
        with self.read() as db:
            rows = db.execute(select(m.connections).order_by(_c.conn_id)).all()
        return [
            {
                "conn_id": r.conn_id,
                "conn_type": r.conn_type,
                "description": r.description,
                "host": r.host,
                "schema": r.schema,
                "login": r.login,
                "password": HIDDEN if r.password else None,
                "port": r.port,
                "extra": HIDDEN if r.extra else None,
                "updated_at": r.updated_at,
            }
            for r in rows
        ]

    def export_connections(self, box: SecretBox) -> list[Connection]:
        with self.read() as db:
            rows = db.execute(select(m.connections).order_by(_c.conn_id)).all()
        return [_decrypted(r, box) for r in rows]

    def delete_connection(self, conn_id: str, now: datetime) -> None:
        with self.write() as db:
            done = db.execute(delete(m.connections).where(_c.conn_id == conn_id)).rowcount
            if not done:
                raise NotFoundError(f"no connection {conn_id!r}")
            record_event(db, now, "connection_deleted", f"connection {conn_id} deleted")

    def rotate_secrets_key(self, box: SecretBox) -> tuple[int, int]:
        """Encrypt every secret again with the box's first key, in one transaction:
        (variables, connections) re-encrypted."""
        from orchestrator.store.credentials.variable_store import rotate_variables

        with self.write() as db:
            variables = rotate_variables(db, box)
            rows = db.execute(
                select(_c.id, _c.conn_id, _c.password, _c.extra).where(
                    _c.password.is_not(None) | _c.extra.is_not(None)
                )
            ).all()
            for r in rows:
                what = f"connection {r.conn_id!r}"
                db.execute(
                    update(m.connections)
                    .where(_c.id == r.id)
                    .values(
                        password=box.rotate(r.password, what) if r.password else None,
                        extra=box.rotate(r.extra, what) if r.extra else None,
                    )
                )
        return variables, len(rows)

    def check_secrets_key(self, box: SecretBox) -> None:
        """Raise SecretsKeyError if ``box`` cannot decrypt the stored secrets (one of
        each kind is tried): a process refuses to start rather than show garbage."""
        with self.read() as db:
            var = db.execute(
                select(m.variables.c.key, m.variables.c.val)
                .where(m.variables.c.is_encrypted.is_(True))
                .limit(1)
            ).first()
            conn = db.execute(
                select(_c.conn_id, _c.password, _c.extra)
                .where(_c.password.is_not(None) | _c.extra.is_not(None))
                .limit(1)
            ).first()
        if var is not None:
            box.decrypt(var.val, f"variable {var.key!r}")
        if conn is not None:
            box.decrypt(conn.password or conn.extra, f"connection {conn.conn_id!r}")


def _put(
    db: SqlConnection, conn: Connection, now: datetime, box: SecretBox, overwrite: bool
) -> None:
    values = {
        "conn_type": conn.conn_type,
        "description": conn.description,
        "host": conn.host,
        "schema": conn.schema,
        "login": conn.login,
        "password": box.encrypt(conn.password) if conn.password is not None else None,
        "port": conn.port,
        "extra": box.encrypt(json.dumps(conn.extra)) if conn.extra else None,
        "updated_at": now,
    }
    found = db.execute(select(_c.id).where(_c.conn_id == conn.conn_id)).first()
    if found is not None and not overwrite:
        raise ConfigError(f"connection {conn.conn_id!r} exists already")
    if found is not None:
        db.execute(update(m.connections).where(_c.id == found[0]).values(**values))
    else:
        db.execute(insert(m.connections).values(conn_id=conn.conn_id, **values))
    record_event(db, now, "connection_set", f"connection {conn.conn_id} set")


def _decrypted(row: Any, box: SecretBox) -> Connection:
    what = f"connection {row.conn_id!r}"
    extra = json.loads(box.decrypt(row.extra, what)) if row.extra else {}
    return Connection(
        conn_id=row.conn_id,
        conn_type=row.conn_type,
        host=row.host,
        login=row.login,
        password=box.decrypt(row.password, what) if row.password is not None else None,
        port=row.port,
        schema=row.schema,
        extra=extra,
        description=row.description,
    )
