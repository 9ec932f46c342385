"""API tokens: ``orc_<token_id>_<secret>``, shown once, stored as the secret's sha256.

>>> token = store.create_token("ada", now, role="operator", name="ci")   # doctest: +SKIP
>>> store.authenticate_token(token.token, now).role                      # doctest: +SKIP
'operator'

The public ``token_id`` is what is looked up (an index probe), so the secret is never
compared in SQL; it is hashed and compared with :func:`hmac.compare_digest`, and that
happens for every token presented, well-formed or not, known or not (against a dummy
hash), so a wrong token costs what a right one costs and its answer time says nothing.
The reason a token is refused names revocation or expiry only to whoever holds its
full secret; anyone else hears "unknown token".

sha256 rather than scrypt: a password is guessable and needs a slow hash; a token's
secret is 256 random bits (``secrets.token_urlsafe(32)``), which no speed of hashing
makes guessable, while a slow hash would cost every API request tens of milliseconds
(and hand a caller a cheap way to keep the server busy).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.roles import check_role, role_rank
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event

PREFIX = "orc_"
_ID = re.compile(r"[0-9a-f]{12}")
_TOKEN = re.compile(r"orc_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
_NAME = re.compile(r"[A-Za-z0-9_.@\-]{1,100}")
_EXPIRES = re.compile(r"(\d{1,5})([dhm])")
_DUMMY_ID = "0" * 12  # looked up for a malformed token: never issued (ids are random)
_DUMMY_HASH = hashlib.sha256(b"no such token").hexdigest()
_SEEN_EVERY = timedelta(seconds=60)  # how stale last_used_at may get before it is rewritten
MAX_EXPIRES = timedelta(days=3650)


def parse_expires(text: str) -> timedelta | None:
    """``"90d"``, ``"12h"``, ``"30m"`` as a timedelta; ``"never"`` as None.

    >>> parse_expires("90d"), parse_expires("never")
    (datetime.timedelta(days=90), None)
    """
    if text == "never":
        return None
    match = _EXPIRES.fullmatch(text)
    if match is None:
        raise ConfigError(f"--expires: expected like 90d, 12h, 30m or never, got {text[:40]!r}")
    n, unit = int(match.group(1)), match.group(2)
    delta = {"d": timedelta(days=n), "h": timedelta(hours=n), "m": timedelta(minutes=n)}[unit]
    if not timedelta(0) < delta <= MAX_EXPIRES:
        raise ConfigError(f"--expires: {text!r} must be more than 0 and at most 3650d")
    return delta


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True)
class NewToken:
    """A token just made: ``token`` is the only time its secret exists outside a hash."""

    token_id: str
    token: str
    name: str
    role: str
    expires_at: datetime | None


@dataclass(frozen=True)
class TokenRecord:
    token_id: str
    username: str
    name: str
    role: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class TokenAuth:
    """The outcome of presenting a token: a principal, or ``refused`` with the reason."""

    refused: str | None = None
    token_id: str | None = None
    username: str | None = None
    name: str | None = None
    role: str | None = None  # the token's role, capped at its user's current role

    @property
    def actor(self) -> str:
        """How the event log names what this token does: ``api:ada/token:ci``."""
        return f"api:{self.username}/token:{self.name}"


class TokenStore(StoreBase):
    def create_token(
        self,
        username: str,
        now: datetime,
        *,
        role: str | None = None,
        name: str | None = None,
        expires_in: timedelta | None = timedelta(days=90),
        who: str | None = None,
    ) -> NewToken:
        """A new token of ``username``; ``role`` defaults to the user's and may not
        exceed it; ``name`` (unique per user) defaults to the token id."""
        u = m.users.c
        token_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        name = name or token_id
        if not _NAME.fullmatch(name):
            raise ConfigError(f"token name {name[:40]!r}: use 1-100 letters, digits and _ . @ -")
        try:
            with self.write() as conn:
                user = conn.execute(select(u.id, u.role).where(u.username == username)).first()
                if user is None:
                    raise NotFoundError(f"no user {username!r}")
                role = check_role(role or user.role, "--role")
                if role_rank(role) > role_rank(user.role):
                    raise ConfigError(
                        f"--role {role}: {username} is {user.role}, and a token acts with at "
                        "most its user's role"
                    )
                expires_at = now + expires_in if expires_in is not None else None
                conn.execute(
                    insert(m.api_tokens).values(
                        token_id=token_id,
                        user_id=user.id,
                        name=name,
                        role=role,
                        secret_hash=_digest(secret),
                        created_at=now,
                        expires_at=expires_at,
                    )
                )
                until = f"until {expires_at.isoformat()}" if expires_at else "without expiry"
                record_event(
                    conn,
                    now,
                    "token_created",
                    f"token {token_id} ({name!r}, {role}) of {username} created, valid {until}",
                    actor=who,
                )
        except IntegrityError:
            raise ConfigError(f"{username} has a token named {name!r} already") from None
        return NewToken(token_id, f"{PREFIX}{token_id}_{secret}", name, role, expires_at)

    def list_tokens(self, username: str) -> list[TokenRecord]:
        """Every token of ``username`` (revoked and expired ones too), oldest first."""
        t, u = m.api_tokens.c, m.users.c
        with self.read() as conn:
            if conn.execute(select(u.id).where(u.username == username)).first() is None:
                raise NotFoundError(f"no user {username!r}")
            rows = conn.execute(
                select(m.api_tokens, u.username)
                .join(m.users, u.id == t.user_id)
                .where(u.username == username)
                .order_by(t.created_at, t.token_id)
            ).all()
        return [
            TokenRecord(
                r.token_id,
                r.username,
                r.name,
                r.role,
                r.created_at,
                r.expires_at,
                r.last_used_at,
                r.revoked_at,
            )
            for r in rows
        ]

    def revoke_token(self, token_id: str, now: datetime, *, who: str | None = None) -> bool:
        """Revoke a token (it answers 401 from its next request); False if it was
        revoked already; NotFoundError if there is no such token."""
        t = m.api_tokens.c
        if token_id.startswith(PREFIX):  # a whole token pasted: its id is the middle part
            token_id = token_id[len(PREFIX) :].split("_", 1)[0]
        if not _ID.fullmatch(token_id):
            raise NotFoundError(f"no token {token_id[:40]!r} (ids look like 3f9a0c12be45)")
        with self.write() as conn:
            done = conn.execute(
                update(m.api_tokens)
                .where(t.token_id == token_id, t.revoked_at.is_(None))
                .values(revoked_at=now)
            ).rowcount
            if not done:
                if conn.execute(select(t.token_id).where(t.token_id == token_id)).first() is None:
                    raise NotFoundError(f"no token {token_id!r}")
                return False
            record_event(conn, now, "token_revoked", f"token {token_id} revoked", actor=who)
        return True

    def authenticate_token(self, token: str, now: datetime) -> TokenAuth:
        """Who presents ``token``, or why it is refused (see the module docstring).

        Always one indexed read and one sha256 + constant-time compare, whatever is
        wrong with the token; a valid token's ``last_used_at`` is written at most once
        a minute.
        """
        match = _TOKEN.fullmatch(token)
        token_id, secret = (match.group(1), match.group(2)) if match else (_DUMMY_ID, token)
        t, u = m.api_tokens.c, m.users.c
        with self.read() as conn:
            row = conn.execute(
                select(
                    t.token_id,
                    t.name,
                    t.role,
                    t.secret_hash,
                    t.expires_at,
                    t.last_used_at,
                    t.revoked_at,
                    u.username,
                    u.role.label("user_role"),
                )
                .join(m.users, u.id == t.user_id)
                .where(t.token_id == token_id)
            ).first()
        stored = row.secret_hash if row is not None else _DUMMY_HASH
        same = hmac.compare_digest(_digest(secret), stored)
        if match is None:
            return TokenAuth(f"malformed token: expected {PREFIX}<id>_<secret>, as printed")
        if row is None or not same:
            return TokenAuth("unknown token")
        if row.revoked_at is not None:
            return TokenAuth(f"token {token_id} was revoked at {row.revoked_at.isoformat()}")
        if row.expires_at is not None and row.expires_at <= now:
            return TokenAuth(f"token {token_id} expired at {row.expires_at.isoformat()}")
        if row.last_used_at is None or now - row.last_used_at >= _SEEN_EVERY:
            with self.write() as conn:
                conn.execute(
                    update(m.api_tokens).where(t.token_id == token_id).values(last_used_at=now)
                )
        role = min(row.role, row.user_role, key=role_rank)
        return TokenAuth(None, token_id, row.username, row.name, role)


__all__ = ["NewToken", "TokenAuth", "TokenRecord", "TokenStore", "parse_expires"]
