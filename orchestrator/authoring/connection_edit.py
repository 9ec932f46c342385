"""Saving an edited connection over a stored one: which secrets carry over (issue 24).

An edit that leaves the password or extra out keeps the stored ones only while the
connection still points where it did; pointing it elsewhere (another type, host, port
or login) with the password left out must not send the stored password there.
"""

from __future__ import annotations

import dataclasses

from orchestrator.authoring.credentials import Connection

# what says where a connection's password goes: a change of any of these is a new
# destination, and the stored password and extra must not follow it (issue 24 item 5)
DESTINATION_FIELDS = ("conn_type", "host", "port", "login")


def carry_secrets(
    conn: Connection, stored: Connection | None, *, password_given: bool, extra_given: bool
) -> Connection:
    """``conn`` as an edit saves it over ``stored``: a password or extra not given again
    keeps the stored one only while the destination (type, host, port, login) is the
    same; if any of those changed, what was not given again is dropped (empty).

    >>> old = Connection("db", "postgres", host="db.internal", login="etl", password="pw")
    >>> carry_secrets(Connection("db", "postgres", host="db.internal", login="etl"),
    ...               old, password_given=False, extra_given=False).password
    'pw'
    >>> carry_secrets(Connection("db", "postgres", host="evil.example", login="etl"),
    ...               old, password_given=False, extra_given=False).password is None
    True
    """
    if stored is None:
        return conn
    same = all(getattr(conn, f) == getattr(stored, f) for f in DESTINATION_FIELDS)
    if not same:
        return conn
    return dataclasses.replace(
        conn,
        password=conn.password if password_given else stored.password,
        extra=conn.extra if extra_given else stored.extra,
    )
