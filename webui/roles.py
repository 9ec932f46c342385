"""Who may use which route: ONE table, :data:`ROUTE_ROLES`, endpoint -> least role.

The roles, least first (each may do what the ones before it may):

- ``viewer``: read everything except secrets (every page and GET of the API);
- ``operator``: also trigger, clear, mark, pause, backfill, cancel;
- ``admin``: also users, tokens, variables, connections, pools.

``public`` routes need no login at all. A request is refused (403, before the view
runs, so nothing changes) when its caller's role ranks below the route's entry, and
when the route has no entry (fail closed): ``tests/webui/test_roles.py`` walks
``app.url_map`` and fails for a route missing here, then calls every route with each
role through real HTTP. A new route: add one line below, in its blueprint's group.

Who the caller is (:class:`Principal`): a token's user with the token's role (capped
at the user's), on loopback too; a signed-in session's user with their role; with no
login required (loopback, ``web_login=auto``) and nobody signed in, an anonymous admin.

>>> least_role("actions.trigger"), least_role("api.dags"), least_role("health.health")
('operator', 'viewer', 'public')
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import g, request

from orchestrator.roles import ROLES, role_rank

PUBLIC = "public"

ROUTE_ROLES: dict[str, str] = {
    # no login: probes, the login form, static files (logout ends only your own session)
    "health.health": PUBLIC,
    "auth.login": PUBLIC,
    "auth.logout": PUBLIC,
    "static": PUBLIC,
    # pages
    "pages.dag_list": "viewer",
    "pages.dag_detail": "viewer",
    "pages.import_errors": "viewer",
    "runs.run_detail": "viewer",
    "runs.task_detail": "viewer",
    "events.event_log": "viewer",
    "metrics.metrics": "viewer",  # or the scraper's metrics_token alone
    # HTML form actions
    "actions.trigger": "operator",
    "actions.pause": "operator",
    "actions.bulk_pause": "operator",
    "actions.backfill": "operator",
    "actions.cancel": "operator",
    "actions.clear": "operator",
    "actions.mark": "operator",
    # JSON API, read side
    "api.openapi": "viewer",
    "api.dags": "viewer",
    "api.dag": "viewer",
    "api.runs": "viewer",
    "api.grid": "viewer",
    "api.dag_summary": "viewer",
    "api.run": "viewer",
    "api.run_summary": "viewer",
    "api.task_instance": "viewer",
    "api.log": "viewer",
    "api.events": "viewer",
    "api.import_errors": "viewer",
    "api_actions.csrf": "viewer",
    "api_users.me": "viewer",
    # JSON API, actions
    "api_actions.trigger": "operator",
    "api_actions.pause": "operator",
    "api_actions.backfill": "operator",
    "api_actions.cancel": "operator",
    "api_actions.clear": "operator",
    "api_actions.mark": "operator",
    # DAG versions (issue 17 items 1-2): read side
    "versions.version_page": "viewer",
    "versions.diff_page": "viewer",
    "api_versions.versions": "viewer",
    "api_versions.version": "viewer",
    "api_versions.diff": "viewer",
    # administration
    "api_users.users": "admin",
    # variables and connections (issue 16): secrets, so admin only, reading included
    "credentials.variables": "admin",
    "credentials.set_variable": "admin",
    "credentials.delete_variable": "admin",
    "credentials.connections": "admin",
    "credentials.save_connection": "admin",
    "credentials.delete_connection": "admin",
    "api_credentials.variables": "admin",
    "api_credentials.set_variable": "admin",
    "api_credentials.delete_variable": "admin",
    "api_credentials.connections": "admin",
    "api_credentials.save_connection": "admin",
    "api_credentials.delete_connection": "admin",
    # mapped task instances (issue 14): read side
    "runs.task_detail_mapped": "viewer",
    "runs.log_raw": "viewer",  # a try's log downloaded (issue 27)
    "runs.log_raw_mapped": "viewer",
    "runs.task_instances": "viewer",
    "runs.group_instances": "viewer",  # issue 25 item 7
    "api.group_instances": "viewer",
    "api.task_instance_mapped": "viewer",
    "api.task_instances": "viewer",
    "api.log_mapped": "viewer",
    # assets (issue 15): read side, and emitting an external event (a state change:
    # it can start runs of the DAGs scheduled on the asset)
    "assets.asset_list": "viewer",
    "assets.asset_lineage": "viewer",  # issue 27 item 8
    "calendar.calendar_page": "viewer",
    "calendar.calendar_api": "viewer",
    "assets.api_lineage": "viewer",
    "assets.asset_detail": "viewer",
    "assets.api_assets": "viewer",
    "assets.api_asset": "viewer",
    "assets.api_events": "viewer",
    "assets.api_emit": "operator",
    # issue 30: asset watchers and deferred tasks; a webhook proves itself by its
    # HMAC signature (webui/views/watchers.py), not by a login or a CSRF token
    "watchers.watcher_list": "viewer",
    "watchers.api_watchers": "viewer",
    "watchers.api_deferred": "viewer",
    "watchers.webhook": PUBLIC,
}


def least_role(endpoint: str) -> str | None:
    """The entry of ``endpoint`` in :data:`ROUTE_ROLES`; None if it has none."""
    return ROUTE_ROLES.get(endpoint)


@dataclass(frozen=True)
class Principal:
    """Who the current request acts as."""

    user: str | None  # None: the anonymous loopback user
    role: str
    via: str  # "token", "session" or "loopback"
    token_actor: str | None = None  # "api:ada/token:ci" for a token

    def actor(self, channel: str) -> str:
        """How the event log and the runs name this caller: ``web:ada``,
        ``api:ada/token:ci``, ``web:anonymous@127.0.0.1``."""
        if self.token_actor:
            return self.token_actor
        if self.user:
            return f"{channel}:{self.user}"
        return f"{channel}:anonymous@{request.remote_addr or 'unknown'}"


def set_principal(principal: Principal) -> None:
    g.principal = principal


def principal() -> Principal | None:
    return g.get("principal")


def refusal(endpoint: str | None) -> str | None:
    """Why the current caller may not use ``endpoint`` (the 403's detail), or None."""
    if endpoint is None:  # no route matched: Flask answers 404 or 405
        return None
    least = least_role(endpoint)
    if least is None:
        return f"route {endpoint} has no entry in webui.roles.ROUTE_ROLES, so nobody may use it"
    if least == PUBLIC:
        return None
    who = principal()
    if who is None:
        return "log in first"
    if role_rank(who.role) < role_rank(least):
        name = who.user or "this caller"
        return f"this needs the {least} role; {name} acts as {who.role}"
    return None


def current_role() -> str | None:
    """For templates: the current caller's role (None before the checks ran)."""
    who = principal()
    return who.role if who is not None else None


def may(endpoint: str) -> bool:
    """For templates: may the current caller use ``endpoint``? (buttons are hidden
    when not; the POST is refused anyway)."""
    return refusal(endpoint) is None


__all__ = [
    "PUBLIC",
    "ROLES",
    "ROUTE_ROLES",
    "Principal",
    "current_role",
    "least_role",
    "may",
    "refusal",
]
