"""API tokens through real HTTP on both backends: a token works on every API route
without CSRF, acts with its role (capped at its user's), and an unknown, malformed,
expired or revoked one is 401 with the reason on every route, costing one lookup and
one hash comparison whatever is wrong with it."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
import requests
from conftest import START  # noqa: I001  (tests/webui/conftest.py)
from live import live_server
from sqlalchemy import select
from test_actions import snapshot

from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.store.access import token_store
from orchestrator.store.core import models as m
from webui import create_app

PASSWORD = "long enough password"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_token_is_stored_hashed_and_shown_once(store):
    store.add_user("ada", PASSWORD, START, role="operator")
    made = store.create_token("ada", START, name="ci")
    assert made.token.startswith(f"orc_{made.token_id}_") and made.role == "operator"
    secret = made.token.split("_", 2)[2]
    with store.read() as conn:
        row = conn.execute(select(m.api_tokens)).one()
    assert (
        secret not in repr(row) and row.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    )
    assert made.expires_at == START + timedelta(days=90)
    [listed] = store.list_tokens("ada")
    assert (listed.token_id, listed.name, listed.role) == (made.token_id, "ci", "operator")
    assert not hasattr(listed, "token")


def test_a_token_never_has_more_than_its_users_role(store):
    store.add_user("otto", PASSWORD, START, role="operator")
    with pytest.raises(ConfigError, match="a token acts with at most its user's role"):
        store.create_token("otto", START, role="admin")
    with pytest.raises(ConfigError, match="--role: expected one of viewer, operator, admin"):
        store.create_token("otto", START, role="root")
    with pytest.raises(NotFoundError, match="no user 'nobody'"):
        store.create_token("nobody", START)
    store.create_token("otto", START, name="ci")
    with pytest.raises(ConfigError, match="has a token named 'ci' already"):
        store.create_token("otto", START, name="ci")
    with pytest.raises(ConfigError, match="token name"):
        store.create_token("otto", START, name="no spaces")
    token = store.create_token("otto", START, name="ops").token
    assert store.authenticate_token(token, START).role == "operator"
    store.set_role("otto", "viewer", START)  # demoted: the token drops with the user
    assert store.authenticate_token(token, START).role == "viewer"
    assert sorted(t.name for t in store.list_tokens("otto")) == ["ci", "ops"]
    store.delete_user("otto", START)
    assert store.authenticate_token(token, START).refused == "unknown token"


@pytest.mark.parametrize("text", ["90d", "12h", "30m", "never", "0d", "9999d", "1w", "-1d", ""])
def test_expiry_texts(text):
    good = {"90d": timedelta(days=90), "12h": timedelta(hours=12), "30m": timedelta(minutes=30)}
    if text == "never":
        assert token_store.parse_expires(text) is None
    elif text in good:
        assert token_store.parse_expires(text) == good[text]
    else:
        with pytest.raises(ConfigError, match="--expires"):
            token_store.parse_expires(text)


def test_every_refusal_costs_one_lookup_and_one_hash_comparison(store, monkeypatch):
    """No timing oracle: the same work for a malformed, unknown, wrong, expired, revoked
    and valid token (counted, not timed: tests assert no times)."""
    store.add_user("ada", PASSWORD, START)
    good = store.create_token("ada", START, name="ci", expires_in=timedelta(hours=1))
    gone = store.create_token("ada", START, name="old")
    store.revoke_token(gone.token_id, START)
    wrong = good.token[:-4] + ("AAAA" if not good.token.endswith("AAAA") else "BBBB")
    unknown = "orc_0123456789ab_" + good.token.split("_", 2)[2]
    compares: list[tuple[str, str]] = []
    real = token_store.hmac.compare_digest
    monkeypatch.setattr(
        token_store.hmac,
        "compare_digest",
        lambda a, b: compares.append((a, b)) or real(a, b),
    )
    cases = {
        "nonsense": "malformed token",
        "orc_xyz_abc": "malformed token",
        unknown: "unknown token",
        wrong: "unknown token",
        gone.token: f"token {gone.token_id} was revoked at",
        good.token: None,
    }
    for token, reason in cases.items():
        before = len(compares)
        auth = store.authenticate_token(token, START + timedelta(minutes=5))
        assert len(compares) == before + 1, token
        assert (auth.refused or None) == reason or auth.refused.startswith(reason), token
    expired = store.authenticate_token(good.token, START + timedelta(hours=2))
    assert expired.refused == f"token {good.token_id} expired at {good.expires_at.isoformat()}"
    # only the holder of the whole secret hears "expired" or "revoked"
    assert store.authenticate_token(wrong, START + timedelta(hours=2)).refused == "unknown token"


def test_tokens_through_real_http(settings, store, clock, worked_run, live_cluster):
    run = worked_run()
    store.add_user("otto", PASSWORD, START, role="operator")
    made = store.create_token("otto", START, name="ci", expires_in=timedelta(hours=1))
    app = create_app(settings.with_(web_host="0.0.0.0"), store, clock=clock)  # login required
    with live_server(app) as base:
        ok = _bearer(made.token)
        # reads and actions, no cookie and no CSRF token
        assert requests.get(base + "/api/v1/dags", headers=ok, timeout=30).status_code == 200
        assert requests.get(base + "/dags/pipeline", headers=ok, timeout=30).status_code == 200
        r = requests.post(
            base + f"/api/v1/runs/{run.run_id}/tasks/load/mark",
            json={"state": "success"},
            headers=ok,
            timeout=30,
        )
        assert r.status_code == 200 and "Marked load" in r.json()["message"], r.text
        assert "set-cookie" not in {k.lower() for k in r.headers}
        [listed] = store.list_tokens("otto")
        assert listed.last_used_at == START
        # the event log names the token, and filters by it (API and page)
        r = requests.get(base + "/api/v1/events", params={"actor": "otto"}, headers=ok, timeout=30)
        [mine] = r.json()["events"]
        assert (mine["kind"], mine["actor"]) == ("task_marked_success", "api:otto/token:ci")
        system = requests.get(
            base + "/api/v1/events", params={"actor": "system"}, headers=ok, timeout=30
        ).json()["events"]
        assert system and {e["actor"] for e in system} == {None}
        page = requests.get(base + "/events", params={"actor": "api:otto"}, headers=ok, timeout=30)
        assert page.status_code == 200 and page.text.count("api:otto/token:ci") >= 1
        assert page.text.count('class="kind"') == 1  # one row: otto's token's mark

        revoked = store.create_token("otto", START, name="old")
        store.revoke_token(revoked.token_id, START)
        refusals = {
            "orc_nope": "malformed token: expected orc_<id>_<secret>, as printed",
            "": "malformed token: expected orc_<id>_<secret>, as printed",
            "orc_0123456789ab_" + "x" * 43: "unknown token",
            revoked.token: f"token {revoked.token_id} was revoked at {START.isoformat()}",
        }
        before = snapshot(store)
        for token, reason in refusals.items():
            for method, path in (
                ("GET", "/api/v1/dags"),
                ("POST", "/api/v1/dags/pipeline/pause"),
                ("GET", "/dags/pipeline"),
                ("GET", "/health"),
                ("GET", "/login"),
            ):
                r = requests.request(
                    method, base + path, headers=_bearer(token), json={"paused": True}, timeout=30
                )
                assert r.status_code == 401, (token, path)
                assert r.json()["detail"] == reason, (token, path)
                assert r.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
        assert snapshot(store) == before

        clock.advance(timedelta(hours=2))
        r = requests.get(base + "/api/v1/dags", headers=ok, timeout=30)
        assert r.status_code == 401
        assert (
            r.json()["detail"] == f"token {made.token_id} expired at {made.expires_at.isoformat()}"
        )
    [event] = store.events(kind="task_marked_success")
    assert event.actor == "api:otto/token:ci"


def test_the_openapi_document_declares_the_bearer_scheme(client):
    doc = client.get("/api/v1/openapi.json").get_json()
    scheme = doc["components"]["securitySchemes"]["bearerAuth"]
    assert scheme == scheme | {"type": "http", "scheme": "bearer"}
    assert {"bearerAuth": []} in doc["security"]
    mark = doc["paths"]["/runs/{run_id}/tasks/{task_id}/mark"]["post"]
    assert mark["x-least-role"] == "operator" and "401" in mark["responses"]
    assert doc["paths"]["/users"]["get"]["x-least-role"] == "admin"
    assert doc["paths"]["/dags"]["get"]["x-least-role"] == "viewer"


@pytest.mark.parametrize(
    "header",
    [
        "Bearer orc_\u00fc\u00fc\u00fc\u00fc\u00fc\u00fc\u00fc\u00fc\u00fc\u00fc\u00fc\u00fc_x",
        "Bearer " + "A" * 8000,
        "Bearer orc_0123456789ab_" + "x" * 42 + "'",
        "Bearer orc_0123456789AB_" + "x" * 43,
        "bearer   orc_nope  ",
        "Bearer orc_0123456789ab_" + "x" * 43 + " trailing",
    ],
)
def test_hostile_tokens_are_401_and_change_nothing(app, store, header):
    client = app.test_client()
    before = snapshot(store)
    response = client.post(
        "/api/v1/dags/pipeline/pause", json={"paused": True}, headers={"Authorization": header}
    )
    assert response.status_code == 401
    assert response.get_json()["status"] == 401
    assert response.get_json()["detail"].startswith(("malformed token", "unknown token"))
    assert snapshot(store) == before


def test_another_scheme_is_no_token(client):
    """Basic (or any scheme but Bearer) is not a token: the request goes on as a
    cookie-less one (here loopback, no login), as before tokens existed."""
    response = client.get("/api/v1/me", headers={"Authorization": "Basic YWRhOnNlY3JldA=="})
    assert response.status_code == 200 and response.get_json()["via"] == "loopback"


def test_a_refusal_by_role_is_json_for_the_api_and_a_token_and_a_page_for_a_browser(
    settings, store, clock
):
    """Below a route's role: 403 with a JSON body for an /api/ route or any bearer
    token (a script reads it), and the HTML error page for a browser's form post."""
    from conftest import build_shell_dag  # noqa: I001  (tests/webui/conftest.py)
    from test_sessions import log_in

    store.add_user("vic", PASSWORD, START, role="viewer")
    store.save_dag(build_shell_dag("pipeline"), START)
    app = create_app(settings.with_(web_login="always"), store, clock=clock)
    token = store.create_token("vic", START, name="ci").token
    bearer = {"Authorization": f"Bearer {token}"}
    client = app.test_client()
    for path, kwargs in (
        ("/api/v1/dags/pipeline/pause", {"json": {"paused": True}}),
        ("/dags/pipeline/pause", {"data": {"paused": "true"}}),
    ):
        r = client.post(path, headers=bearer, **kwargs)
        assert r.status_code == 403, path
        assert r.mimetype == "application/json" and r.get_json()["status"] == 403, path
    assert log_in(client, "vic", PASSWORD).status_code == 302
    csrf = client.get("/api/v1/csrf").get_json()["csrf_token"]
    r = client.post(
        "/api/v1/dags/pipeline/pause", json={"paused": True}, headers={"X-CSRF-Token": csrf}
    )
    assert r.status_code == 403
    assert r.mimetype == "application/json" and r.get_json()["status"] == 403
    r = client.post("/dags/pipeline/pause", data={"csrf_token": csrf, "paused": "true"})
    assert r.status_code == 403 and r.mimetype == "text/html"
    assert not store.get_dag("pipeline").is_paused
