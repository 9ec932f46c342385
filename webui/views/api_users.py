"""The JSON API about callers: who am I (any role), and the users and their tokens
(admin). Tokens are made and revoked with ``orchestrator users token|revoke``; no
route hands out a token's secret."""

from __future__ import annotations

from flask import Blueprint, jsonify
from werkzeug.wrappers import Response

from ..current import get_store
from ..formatting import iso
from ..roles import principal

bp = Blueprint("api_users", __name__, url_prefix="/api/v1")


@bp.get("/me")
def me() -> Response:
    """The caller as the server sees it: user (null on loopback without login), role,
    and whether a token or a session (or loopback) speaks."""
    who = principal()
    assert who is not None  # webui.roles.refusal lets no one through without one
    return jsonify({"user": who.user, "role": who.role, "via": who.via})


@bp.get("/users")
def users() -> Response:
    store = get_store()
    items = []
    for name, role, created in store.list_user_roles():
        tokens = [
            {
                "token_id": t.token_id,
                "name": t.name,
                "role": t.role,
                "created_at": iso(t.created_at),
                "expires_at": iso(t.expires_at),
                "last_used_at": iso(t.last_used_at),
                "revoked_at": iso(t.revoked_at),
            }
            for t in store.list_tokens(name)
        ]
        items.append({"username": name, "role": role, "created_at": iso(created), "tokens": tokens})
    return jsonify({"users": items, "total_entries": len(items)})
