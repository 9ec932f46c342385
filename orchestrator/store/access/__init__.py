"""Who may act: users (logins, roles, sessions) and API tokens."""

from orchestrator.store.access.token_store import TokenStore
from orchestrator.store.access.user_store import UserStore


class AccessAggregate(UserStore, TokenStore):
    """Tables ``users``, ``api_tokens``, ``login_failures``."""


__all__ = ["AccessAggregate"]
