"""Sessions end for real (logout, password change, user deletion, idleness), the Secure
cookie flag, and the login throttle (issue 12, items 10 and 11), on SQLite and
PostgreSQL. A "copied cookie" is the session cookie taken from one client and put
into another, as an attacker holding it would."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from conftest import START  # noqa: I001  (tests/webui/conftest.py)
from flask.testing import FlaskClient
from sqlalchemy import select, update

from orchestrator.store.core import models as m
from webui import create_app
from webui.views.auth import SLEEP_KEY

PASSWORD = "long enough password"


@pytest.fixture
def login_app(settings, store, clock):
    store.add_user("ada", PASSWORD, START)
    app = create_app(settings, store, clock=clock, login_required=True)
    app.config["TESTING"] = True
    app.extensions[SLEEP_KEY] = app.extensions.setdefault("slept", []).append  # never sleeps
    return app


def token_of(client: FlaskClient) -> str:
    page = client.get("/login").get_data(as_text=True)
    return page.split('name="csrf_token" value="')[1].split('"')[0]


def log_in(client: FlaskClient, username: str = "ada", password: str = PASSWORD, **environ):
    form = {"csrf_token": token_of(client), "username": username, "password": password}
    return client.post("/login", data=form, environ_overrides=environ)


def copy_of(app, client: FlaskClient) -> FlaskClient:
    """Another client holding the same session cookie."""
    thief = app.test_client()
    cookie = client.get_cookie("session")
    thief.set_cookie("session", cookie.value)
    return thief


def signed_in(client: FlaskClient) -> bool:
    return client.get("/api/v1/dags").status_code == 200


def test_a_copied_cookie_dies_with_logout(login_app):
    client = login_app.test_client()
    assert log_in(client).status_code == 302
    thief = copy_of(login_app, client)
    assert signed_in(thief)
    csrf = client.get("/api/v1/csrf").get_json()["csrf_token"]
    assert client.post("/logout", data={"csrf_token": csrf}).status_code == 302
    assert not signed_in(client)
    assert not signed_in(thief)


def test_a_password_change_ends_every_session(login_app, store):
    client = login_app.test_client()
    log_in(client)
    thief = copy_of(login_app, client)
    store.set_password("ada", "another long password", START)
    assert not signed_in(client) and not signed_in(thief)
    assert log_in(client, password="another long password").status_code == 302
    assert signed_in(client)
    assert not signed_in(thief)  # the new session is not the old cookie's


def test_deleting_a_user_ends_their_sessions(login_app, store):
    client = login_app.test_client()
    log_in(client)
    store.delete_user("ada", START)
    assert not signed_in(client)
    assert log_in(client).status_code == 401
    assert [e.kind for e in store.events(limit=5)][:1] == ["login_failed"]
    assert "user_deleted" in [e.kind for e in store.events(limit=5)]


def test_a_saved_cookie_of_a_deleted_user_fails_when_the_name_is_added_again(
    settings, store, clock
):
    """Issue 24, item 3: the row's random nonce, not the name and version, binds a session
    (on main the cookie worked again, as admin: the version restarts at 0 with the row)."""
    store.add_user("tmpu", PASSWORD, START, role="operator")
    app = create_app(settings, store, clock=clock, login_required=True)
    client = app.test_client()
    assert log_in(client, "tmpu").status_code == 302
    saved = copy_of(app, client)
    assert signed_in(saved)
    store.delete_user("tmpu", START)
    store.add_user("tmpu", "another long password", START, role="admin")
    assert store.session_version("tmpu") == 0  # the version alone cannot tell them apart
    assert not signed_in(saved)
    assert saved.get("/api/v1/me").status_code == 401
    fresh = app.test_client()
    assert log_in(fresh, "tmpu", "another long password").status_code == 302
    assert fresh.get("/api/v1/me").get_json()["role"] == "admin"
    assert not signed_in(saved)


def test_a_session_older_than_the_absolute_lifetime_ends(settings, store, clock):
    """A session kept busy still ends web_session_max_seconds after its login."""
    store.add_user("ada", PASSWORD, START)
    app = create_app(
        settings.with_(web_session_max_seconds=3600, web_session_idle_seconds=600),
        store,
        clock=clock,
        login_required=True,
    )
    client = app.test_client()
    log_in(client)
    for _ in range(11):  # used every 5 minutes: never idle
        clock.advance(minutes=5)
        assert signed_in(client)
    clock.advance(minutes=5, seconds=1)  # 3601 s after the login
    assert not signed_in(client)
    assert log_in(client).status_code == 302
    assert signed_in(client)


def test_the_absolute_lifetime_defaults_to_a_week(settings):
    assert settings.web_session_max_seconds == 7 * 24 * 3600


def test_an_idle_session_ends(login_app, clock):
    client = login_app.test_client()
    log_in(client)
    clock.advance(hours=7)
    assert signed_in(client)  # used: the idle clock starts again
    clock.advance(hours=7, minutes=59)
    assert signed_in(client)
    clock.advance(hours=8, seconds=1)
    assert not signed_in(client)


def test_the_idle_timeout_is_a_setting(settings, store, clock):
    store.add_user("ada", PASSWORD, START)
    app = create_app(
        settings.with_(web_session_idle_seconds=600), store, clock=clock, login_required=True
    )
    client = app.test_client()
    log_in(client)
    clock.advance(seconds=601)
    assert not signed_in(client)


@pytest.mark.parametrize(
    ("mode", "https", "secure"),
    [
        ("auto", False, False),
        ("auto", True, True),
        ("always", False, True),
        ("never", True, False),
    ],
)
def test_secure_cookie_setting(settings, store, clock, mode, https, secure):
    store.add_user("ada", PASSWORD, START)
    app = create_app(
        settings.with_(web_secure_cookie=mode), store, clock=clock, login_required=True
    )
    client = app.test_client()
    base = "https://localhost" if https else "http://localhost"
    page = client.get("/login", base_url=base).get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    response = client.post(
        "/login",
        base_url=base,
        data={"csrf_token": token, "username": "ada", "password": PASSWORD},
        headers={"Origin": base},
    )
    cookie = response.headers["Set-Cookie"]
    assert ("; Secure" in cookie) is secure
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_bad_mode_values_are_refused(settings, store):
    from orchestrator.errors import ConfigError

    with pytest.raises(ConfigError, match="ORCHESTRATOR_WEB_SECURE_COOKIE"):
        create_app(settings.with_(web_secure_cookie="yes"), store)
    with pytest.raises(ConfigError, match="ORCHESTRATOR_WEB_LOGIN"):
        create_app(settings.with_(web_login="sometimes"), store)


# -- login throttle --------------------------------------------------------------------


def test_wrong_passwords_are_throttled_per_user_logged_and_recorded(login_app, store, caplog):
    client = login_app.test_client()
    codes = [log_in(client, password=f"wrong guess {i}").status_code for i in range(5)]
    assert codes == [401] * 5
    refused = log_in(client)  # the right password, too soon
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) == 300
    assert "Too many failed logins" in refused.get_data(as_text=True)
    assert not signed_in(client)
    events = [e for e in store.events(limit=10) if e.kind == "login_failed"]
    assert len(events) == 5
    assert "'ada'" in events[0].message
    failures = [r for r in caplog.records if "failed web UI login" in r.getMessage()]
    assert len(failures) == 5
    logged = caplog.text + " ".join(e.message for e in events)
    assert "wrong guess" not in logged  # never the password


def test_the_throttle_holds_across_app_processes_and_lifts_after_the_window(
    settings, store, clock, login_app
):
    """Two apps (as two web processes would) share the count through the database."""
    other = create_app(settings, store, clock=clock, login_required=True)
    for i in range(5):
        app = login_app if i % 2 else other
        assert log_in(app.test_client(), password="wrong password").status_code == 401
    assert log_in(login_app.test_client()).status_code == 429
    assert log_in(other.test_client()).status_code == 429
    clock.advance(seconds=301)
    assert log_in(login_app.test_client()).status_code == 302


def test_a_success_forgives_earlier_failures(login_app, store):
    client = login_app.test_client()
    for _ in range(4):
        log_in(client, password="wrong password")
    assert log_in(client).status_code == 302
    with store.read() as conn:
        assert conn.execute(select(m.login_failures)).all() == []
    for _ in range(4):
        assert log_in(login_app.test_client(), password="nope nope").status_code == 401


def test_wrong_logins_from_one_address_slow_it_down_but_never_lock_out_a_right_one(
    login_app, store
):
    """Issue 24 item 9: 20 wrong logins from one address used to give every user 429."""
    store.add_user("bob", PASSWORD, START)
    attacker = {"REMOTE_ADDR": "203.0.113.9"}
    for i in range(20):
        name = f"user{i}"  # a different name each time: only the address repeats
        r = log_in(login_app.test_client(), name, "wrong password", **attacker)
        assert r.status_code == 401
    assert login_app.extensions["slept"] == []  # no slowdown below the address's limit
    assert log_in(login_app.test_client(), "bob", PASSWORD, **attacker).status_code == 302
    assert login_app.extensions["slept"] == [0.5]  # slowed, then let in
    other = {"REMOTE_ADDR": "198.51.100.1"}
    assert log_in(login_app.test_client(), "bob", PASSWORD, **other).status_code == 302
    assert login_app.extensions["slept"] == [0.5]  # another address is not slowed


def test_throttle_limits_are_settings(settings, store, clock):
    store.add_user("ada", PASSWORD, START)
    s = settings.with_(web_login_max_failures=2, web_login_window_seconds=60)
    app = create_app(s, store, clock=clock, login_required=True)
    for _ in range(2):
        log_in(app.test_client(), password="wrong password")
    r = log_in(app.test_client())
    assert r.status_code == 429 and r.headers["Retry-After"] == "60"
    clock.advance(timedelta(seconds=61))
    assert log_in(app.test_client()).status_code == 302


def test_odd_user_names_are_counted_safely(login_app, store):
    for name in ("x" * 5000, "\u202e", "a\tb", "' OR 1=1 --"):
        assert log_in(login_app.test_client(), name, "wrong password").status_code == 401
    with store.read() as conn:
        names = conn.execute(select(m.login_failures.c.username)).scalars().all()
    assert max(map(len, names)) == 100
    assert "?" in names and "a?b" in names


def test_the_last_use_is_written_back_once_a_minute(settings, store, clock):
    """A request rewrites the cookie's "last used" time only when it is a minute old or
    more (a cookie per request otherwise), so idleness is counted from that write: a
    session used 60 s after its login is still alive 90 s after that use, and one used
    59 s after it is not rewritten (no Set-Cookie)."""
    store.add_user("ada", PASSWORD, START)
    app = create_app(
        settings.with_(web_session_idle_seconds=100), store, clock=clock, login_required=True
    )
    client = app.test_client()
    log_in(client)
    clock.advance(seconds=59)
    assert "Set-Cookie" not in client.get("/api/v1/dags").headers  # too soon to rewrite
    clock.advance(seconds=1)  # 60 s since the login: "last used" is written
    assert "Set-Cookie" in client.get("/api/v1/dags").headers
    clock.advance(seconds=90)  # 150 s after the login, 90 s after that use
    assert signed_in(client)
    clock.advance(seconds=101)
    assert not signed_in(client)


def test_each_session_gets_its_own_csrf_token_of_32_random_bytes(login_app):
    """The token is secrets.token_urlsafe(32): 43 URL-safe characters, made once per
    session (the same on every page of it) and new with the next login."""
    client = login_app.test_client()
    first = token_of(client)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", first)
    assert token_of(client) == first
    log_in(client)
    mine = client.get("/api/v1/csrf").get_json()["csrf_token"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", mine) and mine != first
    assert client.get("/api/v1/csrf").get_json()["csrf_token"] == mine
    assert token_of(login_app.test_client()) not in (first, mine)


def test_a_session_lives_to_the_second_of_its_idle_and_absolute_limits(settings, store, clock):
    """Idle for exactly web_session_idle_seconds, or exactly web_session_max_seconds
    after its login, a session still works; one second more ends it."""
    store.add_user("ada", PASSWORD, START)
    app = create_app(
        settings.with_(web_session_max_seconds=1200, web_session_idle_seconds=600),
        store,
        clock=clock,
        login_required=True,
    )
    client = app.test_client()
    log_in(client)
    clock.advance(seconds=600)
    assert signed_in(client)  # idle exactly 600 s
    clock.advance(seconds=600)
    assert signed_in(client)  # idle 600 s again, and exactly 1200 s since the login
    clock.advance(seconds=1)
    assert not signed_in(client)
    log_in(client)
    clock.advance(seconds=601)
    assert not signed_in(client)


def test_an_api_call_without_a_session_is_401_in_json(login_app):
    response = login_app.test_client().get("/api/v1/dags")
    assert response.status_code == 401
    assert response.get_json() == {"status": 401, "title": "Unauthorized", "detail": "log in first"}


def test_a_signed_cookie_without_a_session_key_is_no_session(login_app):
    """A cookie signed with the app's key that names a user but carries no session key
    (one made before session keys existed, or a key that is no string) is refused
    with 401, never a 500."""
    at = int(START.timestamp())
    serializer = login_app.session_interface.get_signing_serializer(login_app)
    client = login_app.test_client()
    for data in ({"user": "ada"}, {"user": "ada", "sk": 7, "since": at, "seen": at}):
        client.set_cookie("session", serializer.dumps(data))
        assert client.get("/api/v1/dags").status_code == 401, data


def test_a_user_row_without_a_nonce_never_gets_a_session(login_app, store):
    """A users row left with the column's default nonce ('unset') has no session key:
    its password still checks, but the session it gets is refused on the next request."""
    with store.write() as conn:
        conn.execute(
            update(m.users).where(m.users.c.username == "ada").values(session_nonce="unset")
        )
    client = login_app.test_client()
    log_in(client)
    assert not signed_in(client)
