"""Issue 24 item 16: what is checked when (docs/webui.md, "What is checked when"): a
request with a bearer token is judged by the token alone, skipping the
Sec-Fetch-Site/Origin/Referer check and the CSRF token; a cookie session gets both;
the Host allow-list and the NUL check hold for both. Each row of the docs' table."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import START, build_shell_dag  # noqa: I001  (tests/webui/conftest.py)
from test_actions import snapshot
from test_sessions import PASSWORD, log_in

from webui import create_app

DOCS = Path(__file__).resolve().parents[2] / "docs" / "webui.md"
HOSTILE = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site",
           "Referer": "https://evil.example/page"}  # fmt: skip
PAUSE = "/api/v1/dags/pipeline/pause"


@pytest.fixture
def app(settings, store, clock):
    store.add_user("ada", PASSWORD, START, role="operator")
    store.add_user("vic", PASSWORD, START, role="viewer")
    store.save_dag(build_shell_dag("pipeline"), START)
    app = create_app(settings, store, clock=clock, login_required=True)
    app.config["TESTING"] = True
    return app


def _bearer(store, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {store.create_token(user, START, name='t').token}"}


def test_a_bearer_request_skips_the_origin_check_and_the_csrf_token(app, store):
    client = app.test_client()
    response = client.post(PAUSE, json={"paused": True}, headers=_bearer(store, "ada") | HOSTILE)
    assert response.status_code == 200, response.get_json()
    assert store.get_dag("pipeline").is_paused


def test_a_cookie_session_gets_the_origin_check_even_with_its_csrf_token(app, store):
    client = app.test_client()
    assert log_in(client).status_code == 302
    csrf = client.get("/api/v1/csrf").get_json()["csrf_token"]
    before = snapshot(store)
    refused = client.post(PAUSE, json={"paused": True}, headers={"X-CSRF-Token": csrf} | HOSTILE)
    assert refused.status_code == 403 and "cross-site" in refused.get_json()["detail"]
    no_token = client.post(PAUSE, json={"paused": True})
    assert no_token.status_code == 400 and "CSRF" in no_token.get_json()["detail"]
    assert snapshot(store) == before
    ok = client.post(PAUSE, json={"paused": True}, headers={"X-CSRF-Token": csrf})
    assert ok.status_code == 200


def test_a_bearer_request_still_gets_the_host_and_nul_checks(app, store):
    client = app.test_client()
    headers = _bearer(store, "ada")
    foreign = client.post(PAUSE, json={"paused": True}, headers=headers | {"Host": "evil.example"})
    assert foreign.status_code == 400
    nul = client.post(PAUSE + "?x=%00", json={"paused": True}, headers=headers)
    assert nul.status_code == 400
    assert not store.get_dag("pipeline").is_paused  # nothing changed


def test_a_bad_token_is_401_and_a_weak_one_403_whatever_the_origin(app, store):
    client = app.test_client()
    vic = _bearer(store, "vic")
    bad = client.post(PAUSE, json={"paused": True},
                      headers={"Authorization": "Bearer orc_1_nope"} | HOSTILE)  # fmt: skip
    assert bad.status_code == 401
    weak = client.post(PAUSE, json={"paused": True}, headers=vic | HOSTILE)
    assert weak.status_code == 403
    assert not store.get_dag("pipeline").is_paused  # nothing changed


def test_a_session_cookie_beside_a_token_is_ignored(app, store):
    client = app.test_client()
    assert log_in(client, "ada").status_code == 302  # an operator's session
    vic = _bearer(store, "vic")
    response = client.post(PAUSE, json={"paused": True}, headers=vic)
    assert response.status_code == 403  # the viewer token's role, not the session's
    assert not store.get_dag("pipeline").is_paused  # nothing changed


def test_the_docs_say_exactly_this():
    text = DOCS.read_text()
    assert "**What is checked when**" in text
    section = text.split("**What is checked when**", 1)[1].split("\n- ", 1)[0]
    assert "skips the `Sec-Fetch-Site`/`Origin`/`Referer` check and the\n  CSRF token" in section
    row = next(line for line in section.splitlines() if "`Authorization: Bearer` an API" in line)
    assert row.count("**no**") == 2
