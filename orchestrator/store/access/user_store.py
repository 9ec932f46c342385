"""Web UI logins: users with scrypt/pbkdf2 password hashes (werkzeug.security),
their session versions, and the failed-login counts the login throttle reads.

>>> store.add_user("ada", "correct horse battery", now)   # doctest: +SKIP
>>> store.check_password("ada", "correct horse battery")  # doctest: +SKIP
True
>>> store.session_version("ada")                          # doctest: +SKIP
0

A signed-in session carries the user's ``session_version`` and the row's random
``session_nonce`` (set when the row is created, so a deleted and re-added user of the
same name has another); logout (:meth:`UserStore.end_sessions`),
:meth:`UserStore.set_password` and :meth:`UserStore.delete_user` move the version on
(or remove the row), so every cookie issued before is refused on its next request.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from werkzeug.security import check_password_hash, generate_password_hash

from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.roles import check_role
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event

USERNAME = re.compile(r"^[A-Za-z0-9_.@\-]{1,100}$")
MIN_PASSWORD = 8
# Compared against when the user does not exist, so a wrong name costs as much as a
# wrong password (no user enumeration by timing).
_DUMMY_HASH = generate_password_hash("not-a-real-password")
_KEEP = timedelta(days=1)  # login failures older than this are dropped


def _printable(text: str) -> str:
    """A user-typed name or address as stored: at most 100 characters, no control ones."""
    return "".join(c if c.isprintable() else "?" for c in text[:100])


def _check_new(username: str, password: str) -> None:
    if not USERNAME.fullmatch(username):
        raise ConfigError(
            f"user name {username!r}: use 1-100 letters, digits and _ . @ - characters"
        )
    if len(password) < MIN_PASSWORD:
        raise ConfigError(f"password for {username!r}: use at least {MIN_PASSWORD} characters")


def _key(nonce: str, version: int) -> str:
    # every row has a nonce (add_user, migration 0029); the column's default never matches
    return "" if nonce in ("", "unset") else f"{nonce}.{version}"


class UserStore(StoreBase):
    def add_user(
        self,
        username: str,
        password: str,
        now: datetime,
        *,
        role: str = "admin",
        who: str | None = None,
    ) -> None:
        """Create a login with ``role``; ConfigError if the name is taken, the password
        too short or the role unknown. (``role`` defaults to admin, what every login
        could do before roles; ``orchestrator users add`` defaults to viewer.)"""
        _check_new(username, password)
        check_role(role)
        try:
            with self.write() as conn:
                conn.execute(
                    insert(m.users).values(
                        username=username,
                        password_hash=generate_password_hash(password),
                        created_at=now,
                        role=role,
                        session_nonce=secrets.token_hex(16),
                    )
                )
                record_event(
                    conn, now, "user_added", f"web UI user {username} added as {role}", actor=who
                )
        except IntegrityError:
            raise ConfigError(f"user {username!r} exists already") from None

    def set_role(self, username: str, role: str, now: datetime, *, who: str | None = None) -> str:
        """Give ``username`` another role; returns the one it had. Its tokens keep
        theirs but never act above the user's role (see :meth:`TokenStore.authenticate`)."""
        check_role(role)
        with self.write() as conn:
            was = conn.execute(
                select(m.users.c.role).where(m.users.c.username == username)
            ).scalar_one_or_none()
            if was is None:
                raise NotFoundError(f"no user {username!r}")
            conn.execute(update(m.users).where(m.users.c.username == username).values(role=role))
            record_event(conn, now, "user_role_set", f"{username} is {role} (was {was})", actor=who)
        return str(was)

    def user_role(self, username: str) -> str | None:
        """The role of ``username``; None if no such user."""
        with self.read() as conn:
            return conn.execute(
                select(m.users.c.role).where(m.users.c.username == username)
            ).scalar_one_or_none()

    def session_of(self, username: str) -> tuple[str, str] | None:
        """(session key, role) of ``username`` in one read; None if no such user.

        The key (``<nonce>.<version>``) is what a session of this user must carry: it
        changes on logout and password change, and differs for a re-added user."""
        u = m.users.c
        with self.read() as conn:
            row = conn.execute(
                select(u.session_version, u.session_nonce, u.role).where(u.username == username)
            ).first()
        return None if row is None else (_key(row.session_nonce, row.session_version), row.role)

    def set_password(
        self, username: str, password: str, now: datetime, *, who: str | None = None
    ) -> None:
        _check_new(username, password)
        with self.write() as conn:
            done = conn.execute(
                update(m.users)
                .where(m.users.c.username == username)
                .values(
                    password_hash=generate_password_hash(password),
                    session_version=m.users.c.session_version + 1,
                )
            ).rowcount
            if not done:
                raise NotFoundError(f"no user {username!r}")
            record_event(
                conn,
                now,
                "user_password_set",
                f"password of {username} changed; their sessions were ended",
                actor=who,
            )

    def delete_user(self, username: str, now: datetime, *, who: str | None = None) -> None:
        """Remove a login and its API tokens; its sessions stop working at once.
        NotFoundError if unknown."""
        with self.write() as conn:
            user_id = select(m.users.c.id).where(m.users.c.username == username)
            conn.execute(delete(m.api_tokens).where(m.api_tokens.c.user_id.in_(user_id)))
            done = conn.execute(delete(m.users).where(m.users.c.username == username)).rowcount
            if not done:
                raise NotFoundError(f"no user {username!r}")
            record_event(conn, now, "user_deleted", f"web UI user {username} deleted", actor=who)

    def session_version(self, username: str) -> int | None:
        """The version of ``username``'s sessions (moved on by logout); None if no such user."""
        with self.read() as conn:
            return conn.execute(
                select(m.users.c.session_version).where(m.users.c.username == username)
            ).scalar_one_or_none()

    def session_key(self, username: str) -> str | None:
        """The key a new session of ``username`` carries; None if no such user."""
        found = self.session_of(username)
        return None if found is None else found[0]

    def end_sessions(self, username: str) -> bool:
        """Invalidate every session of ``username`` (logout). False if no such user."""
        with self.write() as conn:
            return bool(
                conn.execute(
                    update(m.users)
                    .where(m.users.c.username == username)
                    .values(session_version=m.users.c.session_version + 1)
                ).rowcount
            )

    # -- login throttle -------------------------------------------------------------------

    def record_login_failure(
        self, username: str, address: str, now: datetime, *, window: timedelta = _KEEP
    ) -> None:
        """Count one wrong login (never the password), as a row and an event.

        Rows older than a day (or the throttle's ``window``, if longer) are dropped on
        the way, so the table stays small.
        """
        name, addr = _printable(username), _printable(address)
        keep = max(window, _KEEP)
        with self.write() as conn:
            conn.execute(delete(m.login_failures).where(m.login_failures.c.at < now - keep))
            conn.execute(insert(m.login_failures).values(at=now, username=name, address=addr))
            record_event(conn, now, "login_failed", f"failed web UI login as {name!r} from {addr}")

    def login_failures(self, username: str, address: str, since: datetime) -> tuple[int, int]:
        """Wrong logins since ``since``: (of this user name from this address, from this
        address for any name)."""
        f = m.login_failures.c
        name, addr = _printable(username), _printable(address)
        with self.read() as conn:
            by_pair = conn.execute(
                select(func.count()).where(f.username == name, f.address == addr, f.at >= since)
            ).scalar_one()
            by_address = conn.execute(
                select(func.count()).where(f.address == _printable(address), f.at >= since)
            ).scalar_one()
        return by_pair, by_address

    def clear_login_failures(self, username: str, address: str) -> None:
        """A successful login forgives the earlier failures of its (name, address) pair,
        not the address's failures for other names."""
        f = m.login_failures.c
        name, addr = _printable(username), _printable(address)
        with self.write() as conn:
            conn.execute(delete(m.login_failures).where(f.username == name, f.address == addr))

    def check_password(self, username: str, password: str) -> bool:
        if not USERNAME.fullmatch(username):  # cannot exist (and NUL would upset PostgreSQL)
            check_password_hash(_DUMMY_HASH, password)
            return False
        with self.read() as conn:
            stored = conn.execute(
                select(m.users.c.password_hash).where(m.users.c.username == username)
            ).scalar_one_or_none()
        if stored is None:
            check_password_hash(_DUMMY_HASH, password)
            return False
        return check_password_hash(stored, password)

    def count_users(self) -> int:
        with self.read() as conn:
            return conn.execute(select(func.count()).select_from(m.users)).scalar_one()

    def list_users(self) -> list[tuple[str, datetime]]:
        with self.read() as conn:
            rows = conn.execute(
                select(m.users.c.username, m.users.c.created_at).order_by(m.users.c.username)
            ).all()
        return [(r.username, r.created_at) for r in rows]

    def list_user_roles(self) -> list[tuple[str, str, datetime]]:
        """(username, role, created_at) of every login, by name."""
        u = m.users.c
        with self.read() as conn:
            rows = conn.execute(select(u.username, u.role, u.created_at).order_by(u.username))
            return [(r.username, r.role, r.created_at) for r in rows]


def users_before_migrating(url: str) -> int:
    """How many web UI users the database at ``url`` holds, without creating, opening
    for writing or migrating it: 0 for a SQLite file that does not exist yet and for a
    database nobody has migrated (``standalone`` asks before it starts anything)."""
    from sqlalchemy import inspect

    from orchestrator.store.core.db import make_engine
    from orchestrator.store.core.identity import sqlite_path

    path = sqlite_path(url)
    if path is not None and not os.path.exists(path):
        return 0
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("users"):
                return 0
            return conn.execute(select(func.count()).select_from(m.users)).scalar_one()
    finally:
        engine.dispose()
