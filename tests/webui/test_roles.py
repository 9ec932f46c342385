"""Roles, route by route, through real HTTP: every route of the app has an entry in
``webui.roles.ROUTE_ROLES``, and each one is called with a viewer's, an operator's and
an admin's token (and sessions) against a live waitress server: below the route's
role it is 403 and nothing in the database changes; at or above, it is served."""

from __future__ import annotations

import re

import requests
from conftest import START  # noqa: I001  (tests/webui/conftest.py)
from live import live_server
from test_actions import _an_asset_with_an_event, snapshot

from orchestrator.roles import ROLES, role_rank
from webui import create_app
from webui.roles import PUBLIC, ROUTE_ROLES, least_role

PASSWORD = "long enough password"
USERS = {"viewer": "vera", "operator": "otto", "admin": "ada"}

JSON_BODIES = {
    "api_actions.trigger": {"conf": {}},
    "api_actions.pause": {"paused": True},
    "api_actions.backfill": {"start": "2026-01-01", "end": "2026-01-02"},
    "api_actions.cancel": {},
    "api_actions.clear": {"downstream": False},
    "api_actions.mark": {"state": "success"},
    "api_credentials.set_variable": {"key": "greeting", "value": "hi"},
    "api_credentials.delete_variable": {},
    "api_credentials.save_connection": {"conn_id": "db", "uri": "postgresql://u:p@h/db"},
    "api_credentials.delete_connection": {},
    "assets.api_emit": {"uri": "warehouse://sales/daily", "extra": {"rows": 2}},
}
FORM_BODIES = {
    "actions.pause": {"paused": "true"},
    "actions.bulk_pause": {"paused": "true", "dag_id": ["pipeline"]},  # issue 27
    "actions.backfill": {"start": "2026-01-01", "end": "2026-01-02"},
    "actions.clear": {"downstream": "true"},
    "actions.mark": {"state": "success"},
    "credentials.set_variable": {"key": "greeting", "value": "hi"},
    "credentials.save_connection": {"conn_id": "db", "uri": "postgresql://u:p@h/db"},
}


def _calls(app, values):
    """(endpoint, method, path) of every route of ``app``, GETs first."""
    out = []
    for rule in app.url_map.iter_rules():
        path = rule.build(values | {"filename": "style.css"}, append_unknown=False)[1]
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            if rule.endpoint == "auth.login" and method == "POST":
                continue  # public; a login attempt is tested in test_sessions.py
            out.append((rule.endpoint, method, path))
    return sorted(out, key=lambda c: (c[1] != "GET", c[0]))


def _tokens(store):
    tokens = {}
    for role, user in USERS.items():
        store.add_user(user, PASSWORD, START, role=role)
        tokens[role] = store.create_token(user, START, name="ci").token
    return tokens


def _send(base, endpoint, method, path, headers, session=None):
    http = session or requests
    kwargs = {"headers": headers, "timeout": 30, "allow_redirects": False}
    if method == "POST" and endpoint in JSON_BODIES:
        kwargs["json"] = JSON_BODIES[endpoint]
    elif method == "POST":
        kwargs["data"] = FORM_BODIES.get(endpoint, {})
    return http.request(method, base + path, **kwargs)


def test_every_route_has_an_entry_and_every_entry_a_route(app):
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    missing = sorted(endpoints - set(ROUTE_ROLES))
    assert not missing, f"add these to webui/roles.py ROUTE_ROLES: {missing}"
    assert sorted(set(ROUTE_ROLES) - endpoints) == [], "entries without a route"
    assert set(ROUTE_ROLES.values()) <= {PUBLIC, *ROLES}


def test_a_route_without_an_entry_is_refused(app, monkeypatch, client):
    monkeypatch.delitem(ROUTE_ROLES, "api.dags")
    response = client.get("/api/v1/dags")
    assert response.status_code == 403
    assert "no entry in webui.roles.ROUTE_ROLES" in response.get_json()["detail"]


def test_every_route_with_each_role_through_real_http(
    settings, store, clock, worked_run, live_cluster
):
    run = worked_run()
    tokens = _tokens(store)
    app = create_app(settings, store, clock=clock, login_required=True)
    values = {"dag_id": "pipeline", "run_id": run.run_id, "task_id": "load", "try_number": 1}
    values |= {"ref": "current", "a": "1", "b": "current", "key": "greeting", "conn_id": "db"}
    values["asset_id"] = _an_asset_with_an_event(store)  # warehouse://sales/daily
    values["map_index"] = 0  # issue 14: a mapped instance's pages (404 here: no map)
    values["group"] = "grp"  # issue 25 item 7: a mapped task group (404 here: none)
    values["path"] = "orders"  # issue 30: a webhook watcher's path (404 here: none declared)
    calls = _calls(app, values)
    assert len(calls) >= 36
    served = refused = 0
    with live_server(app) as base:
        for endpoint, method, path in calls:
            least = least_role(endpoint)
            for role in ROLES:  # least first: the refusals come before the changes
                headers = {"Authorization": f"Bearer {tokens[role]}"}
                allowed = least == PUBLIC or role_rank(role) >= role_rank(least)
                before = None if allowed else snapshot(store)
                response = _send(base, endpoint, method, path, headers)
                where = f"{method} {path} as {role} (needs {least})"
                if allowed:
                    assert response.status_code not in (401, 403), where
                    assert response.status_code < 500, where
                    served += 1
                else:
                    assert response.status_code == 403, where
                    assert response.json()["detail"] == (
                        f"this needs the {least} role; {USERS[role]} acts as {role}"
                    ), where
                    assert snapshot(store) == before, where
                    refused += 1
    below = sum(role_rank(least_role(e)) for e, _, _ in calls if least_role(e) != PUBLIC)
    assert refused == below >= 14 and served == 3 * len(calls) - below


def _login(base, user):
    http = requests.Session()
    page = http.get(base + "/login", timeout=30).text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    form = {"csrf_token": csrf, "username": user, "password": PASSWORD, "next": "/"}
    assert (
        http.post(base + "/login", data=form, timeout=30, allow_redirects=False).status_code == 302
    )
    # a login starts a fresh session with its own CSRF token
    return http, http.get(base + "/api/v1/csrf", timeout=30).json()["csrf_token"]


def test_sessions_see_only_the_buttons_of_their_role_and_posts_above_it_are_refused(
    settings, store, clock, worked_run, live_cluster
):
    run = worked_run()
    _tokens(store)
    app = create_app(settings, store, clock=clock, login_required=True)
    task_page = f"/runs/{run.run_id}/tasks/load"
    with live_server(app) as base:
        viewer, csrf = _login(base, "vera")
        page = viewer.get(base + task_page, timeout=30).text
        assert "Mark success" not in page and ">Clear<" not in page
        assert '<span class="muted small role">viewer</span>' in page
        dag_page = viewer.get(base + "/dags/pipeline", timeout=30).text
        assert "Trigger run" not in dag_page and "actions.pause" not in dag_page
        assert "/dags/pipeline/pause" not in dag_page and "is-readonly" in dag_page
        assert "Cancel run" not in viewer.get(base + f"/runs/{run.run_id}", timeout=30).text
        dag_list = viewer.get(base + "/", timeout=30).text  # issue 27: no bulk bar, no boxes
        assert "/dags/bulk-pause" not in dag_list and 'name="dag_id"' not in dag_list
        before = snapshot(store)
        for path, form in (
            (f"{task_page}/mark", {"state": "success"}),
            ("/dags/pipeline/trigger", {}),
            ("/dags/bulk-pause", {"paused": "true", "dag_id": "pipeline"}),
            ("/api/v1/dags/pipeline/pause", None),
        ):
            if form is None:
                r = viewer.post(
                    base + path, json={"paused": True}, headers={"X-CSRF-Token": csrf}, timeout=30
                )
                assert r.status_code == 403 and "needs the operator role" in r.json()["detail"]
            else:
                r = viewer.post(base + path, data=form | {"csrf_token": csrf}, timeout=30)
                assert r.status_code == 403 and "needs the operator role" in r.text
        assert snapshot(store) == before

        operator, csrf = _login(base, "otto")
        page = operator.get(base + task_page, timeout=30).text
        assert "Mark success" in page and ">Clear<" in page
        assert "Trigger run" in operator.get(base + "/dags/pipeline", timeout=30).text
        assert 'name="dag_id" value="pipeline"' in operator.get(base + "/", timeout=30).text
        r = operator.post(
            base + f"{task_page}/mark",
            data={"state": "success", "csrf_token": csrf},
            timeout=30,
            allow_redirects=False,
        )
        assert r.status_code == 302
        # a session still needs its CSRF token (a token request does not)
        r = operator.post(base + "/api/v1/dags/pipeline/pause", json={"paused": True}, timeout=30)
        assert r.status_code == 400 and "CSRF" in r.json()["detail"]
        assert operator.get(base + "/api/v1/users", timeout=30).status_code == 403
    [event] = store.events(kind="task_marked_success")
    assert event.actor == "web:otto" and "by web:otto" in event.message
    assert store.get_dag("pipeline").is_paused is False


def test_loopback_without_login_is_admin_but_a_token_acts_with_its_role(
    app, store, worked_run, live_cluster
):
    worked_run()
    tokens = _tokens(store)
    with live_server(app) as base:  # loopback, web_login=auto: no login asked
        csrf_session = requests.Session()
        csrf = csrf_session.get(base + "/api/v1/csrf", timeout=30).json()["csrf_token"]
        assert csrf_session.get(base + "/api/v1/me", timeout=30).json() == {
            "user": None,
            "role": "admin",
            "via": "loopback",
        }
        assert csrf_session.get(base + "/api/v1/users", timeout=30).status_code == 200
        viewer = {"Authorization": f"Bearer {tokens['viewer']}"}
        me = requests.get(base + "/api/v1/me", headers=viewer, timeout=30).json()
        assert me == {"user": "vera", "role": "viewer", "via": "token"}
        before = snapshot(store)
        # even with the loopback admin's cookie and CSRF token beside it
        r = csrf_session.post(
            base + "/api/v1/dags/pipeline/pause",
            json={"paused": True},
            headers=viewer | {"X-CSRF-Token": csrf},
            timeout=30,
        )
        assert r.status_code == 403 and "vera acts as viewer" in r.json()["detail"]
        assert snapshot(store) == before
        operator = {"Authorization": f"Bearer {tokens['operator']}"}
        r = requests.post(
            base + "/api/v1/dags/pipeline/pause",
            json={"paused": True},
            headers=operator,
            timeout=30,
        )
        assert r.status_code == 200, r.text
    [event] = store.events(kind="dag_paused")
    assert event.actor == "api:otto/token:ci"


def test_the_openapi_document_gives_each_operation_its_least_role(client):
    doc = client.get("/api/v1/openapi.json").get_json()
    roles = {
        (method, path): op["x-least-role"]
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
    }
    assert set(roles.values()) <= set(ROLES), roles
    assert roles[("post", "/dags/{dag_id}/runs")] == "operator"
    assert roles[("get", "/events")] == "viewer"
