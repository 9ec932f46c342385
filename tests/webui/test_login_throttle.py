"""Issue 24 item 9: login throttling per (user, address) pair plus a progressive
slowdown per address; a right password is never refused because of someone else's
wrong ones. Both backends; the slowdown's waits go to a fake sleep (nothing sleeps)."""

from __future__ import annotations

import threading

import pytest
from conftest import START  # noqa: I001  (tests/webui/conftest.py)
from test_sessions import PASSWORD, log_in, signed_in

from webui import create_app
from webui.views.auth import MAX_DELAY, SLEEP_KEY, login_delay

ATTACKER = {"REMOTE_ADDR": "203.0.113.9"}
ADA_HOME = {"REMOTE_ADDR": "198.51.100.7"}


@pytest.fixture
def app(settings, store, clock):
    store.add_user("ada", PASSWORD, START)
    store.add_user("mallory", PASSWORD, START)
    app = create_app(settings, store, clock=clock, login_required=True)
    app.config["TESTING"] = True
    app.extensions["slept"] = []
    app.extensions[SLEEP_KEY] = app.extensions["slept"].append
    return app


def _fail(app, name: str, n: int, environ: dict[str, str]) -> list[int]:
    return [log_in(app.test_client(), name, f"wrong {i}", **environ).status_code for i in range(n)]


def _spray(app, n: int) -> None:
    """``n`` wrong logins from the attacker's address, each for another name."""
    for i in range(n):
        assert log_in(app.test_client(), f"name{i}", "wrong", **ATTACKER).status_code == 401


def test_guessing_a_users_password_elsewhere_does_not_lock_the_user_out(app):
    assert _fail(app, "ada", 5, ATTACKER) == [401] * 5
    assert log_in(app.test_client(), "ada", PASSWORD, **ATTACKER).status_code == 429
    client = app.test_client()
    assert log_in(client, "ada", PASSWORD, **ADA_HOME).status_code == 302  # main: 429
    assert signed_in(client)


def test_an_address_is_slowed_progressively_and_capped(app, clock):
    names = [f"user{i}" for i in range(30)]
    for name in names:
        assert log_in(app.test_client(), name, "wrong", **ATTACKER).status_code == 401
    slept = app.extensions["slept"]
    assert slept[:4] == [0.5, 1.0, 2.0, 4.0]
    assert slept == sorted(slept) and max(slept) == MAX_DELAY and len(slept) == 10
    # the right password from the slowed address still gets in, after the wait
    assert log_in(app.test_client(), "ada", PASSWORD, **ATTACKER).status_code == 302
    assert slept[-1] == MAX_DELAY
    clock.advance(seconds=301)  # the window passed: no more slowdown
    assert log_in(app.test_client(), "ada", PASSWORD, **ATTACKER).status_code == 302
    assert len(slept) == 11


def test_an_attackers_own_good_login_does_not_wipe_the_addresss_count(app):
    _fail(app, "ada", 4, ATTACKER)
    _spray(app, 16)
    assert log_in(app.test_client(), "mallory", PASSWORD, **ATTACKER).status_code == 302
    assert app.extensions["slept"] == [0.5]
    assert log_in(app.test_client(), "ada", "wrong again", **ATTACKER).status_code == 401
    assert app.extensions["slept"] == [0.5, 0.5]  # still 20 wrong ones counted
    assert log_in(app.test_client(), "ada", PASSWORD, **ATTACKER).status_code == 429  # 5th


def test_slowed_logins_cannot_take_every_thread(app):
    _spray(app, 20)
    started, release = threading.Event(), threading.Event()

    def hold(_seconds: float) -> None:
        started.set()
        release.wait(10)

    app.extensions[SLEEP_KEY] = hold
    slots = app.extensions["orchestrator_login_slots"] = threading.BoundedSemaphore(2)
    assert slots.acquire(blocking=False) and slots.acquire(blocking=False)  # both busy
    try:
        r = log_in(app.test_client(), "ada", PASSWORD, **ATTACKER)
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        assert not started.is_set()
    finally:
        slots.release()
        slots.release()
    app.extensions[SLEEP_KEY] = app.extensions["slept"].append
    assert log_in(app.test_client(), "ada", PASSWORD, **ATTACKER).status_code == 302


def test_login_delay_is_pure():
    assert login_delay(19, 20) == 0.0
    assert [login_delay(n, 3) for n in range(3, 9)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert login_delay(10**9, 0) == MAX_DELAY
