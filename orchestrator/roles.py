"""The roles of web UI logins and API tokens, least first: each may do what the ones
before it may (docs/webui.md#roles). Which route needs which is ``webui/roles.py``.

>>> role_rank("operator") > role_rank("viewer"), check_role("admin")
(True, 'admin')
"""

from __future__ import annotations

from orchestrator.errors import ConfigError

ROLES = ("viewer", "operator", "admin")


def check_role(role: str, what: str = "role") -> str:
    """``role`` if it is one of :data:`ROLES`, else ConfigError naming ``what``."""
    if role not in ROLES:
        raise ConfigError(f"{what}: expected one of {', '.join(ROLES)}, got {role[:40]!r}")
    return role


def role_rank(role: str) -> int:
    """0 for viewer, 1 operator, 2 admin; -1 for anything else (allowed nothing)."""
    return ROLES.index(role) if role in ROLES else -1
