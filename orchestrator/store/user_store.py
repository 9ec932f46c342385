"""Web UI logins: users with scrypt/pbkdf2 password hashes (werkzeug.security).

>>> store.add_user("ada", "correct horse battery", now)   # doctest: +SKIP
>>> store.check_password("ada", "correct horse battery")  # doctest: +SKIP
True
"""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from werkzeug.security import check_password_hash, generate_password_hash

from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.store import models as m
from orchestrator.store.base import StoreBase, record_event

USERNAME = re.compile(r"^[A-Za-z0-9_.@\-]{1,100}$")
MIN_PASSWORD = 8
# Compared against when the user does not exist, so a wrong name costs as much as a
# wrong password (no user enumeration by timing).
_DUMMY_HASH = generate_password_hash("not-a-real-password")


def _check_new(username: str, password: str) -> None:
    if not USERNAME.fullmatch(username):
        raise ConfigError(
            f"user name {username!r}: use 1-100 letters, digits and _ . @ - characters"
        )
    if len(password) < MIN_PASSWORD:
        raise ConfigError(f"password for {username!r}: use at least {MIN_PASSWORD} characters")


class UserStore(StoreBase):
    def add_user(self, username: str, password: str, now: datetime) -> None:
        """Create a login; ConfigError if the name is taken or the password too short."""
        _check_new(username, password)
        try:
            with self.write() as conn:
                conn.execute(
                    insert(m.users).values(
                        username=username,
                        password_hash=generate_password_hash(password),
                        created_at=now,
                    )
                )
                record_event(conn, now, "user_added", f"web UI user {username} added")
        except IntegrityError:
            raise ConfigError(f"user {username!r} exists already") from None

    def set_password(self, username: str, password: str, now: datetime) -> None:
        _check_new(username, password)
        with self.write() as conn:
            done = conn.execute(
                update(m.users)
                .where(m.users.c.username == username)
                .values(password_hash=generate_password_hash(password))
            ).rowcount
            if not done:
                raise NotFoundError(f"no user {username!r}")
            record_event(conn, now, "user_password_set", f"password of {username} changed")

    def check_password(self, username: str, password: str) -> bool:
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
