"""Issue 24 item 5: an admin cannot point a stored connection at their own server and
keep its password. When the type, host, port or login change, the stored password and
extra are dropped unless given again; an edit that keeps the destination keeps them.
The form and the JSON API behave the same, on both backends."""

from __future__ import annotations

import pytest
from conftest import START  # noqa: I001  (tests/webui/conftest.py)

from orchestrator.authoring.credentials import Connection
from orchestrator.store.credentials.secret_box import box_of

SECRET = "s3cret-password-9"
EXTRA = {"sslkey": "-----BEGIN KEY-----abc"}
STORED = {"conn_type": "postgres", "host": "db.internal", "port": "5432", "login": "etl",
          "schema": "sales"}  # fmt: skip
MOVES = {
    "host": {"host": "attacker.example"},
    "port": {"port": "6543"},
    "login": {"login": "someone"},
    "conn_type": {"conn_type": "mysql"},
}


@pytest.fixture
def stored(store, settings):
    conn = Connection("wh", "postgres", host="db.internal", port=5432, login="etl",
                      password=SECRET, schema="sales", extra=EXTRA)  # fmt: skip
    store.add_connection(conn, START, box_of(settings))


def _form(client, csrf, fields):
    data = {"csrf_token": csrf, "conn_id": "wh", "replace": "on", "password": "", "extra": ""}
    client.post("/connections", data=data | fields)


def _api(client, csrf, fields):
    body = {"conn_id": "wh", "replace": True} | {k: v for k, v in fields.items() if v != ""}
    if "port" in body:
        body["port"] = int(body["port"])
    response = client.post("/api/v1/connections", json=body, headers={"X-CSRF-Token": csrf})
    assert response.status_code == 201, response.get_json()


SENDERS = {"form": _form, "api": _api}


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("how", sorted(SENDERS))
@pytest.mark.parametrize("moved", sorted(MOVES))
def test_a_new_destination_drops_the_stored_password_and_extra(
    client, csrf, store, settings, how, moved
):
    SENDERS[how](client, csrf, STORED | MOVES[moved])
    conn = store.get_connection("wh", box_of(settings))
    assert getattr(conn, moved) == (int(MOVES[moved][moved]) if moved == "port"
                                    else MOVES[moved][moved])  # fmt: skip
    assert conn.password is None and conn.extra == {}


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("how", sorted(SENDERS))
def test_the_same_destination_keeps_them(client, csrf, store, settings, how):
    SENDERS[how](client, csrf, STORED | {"schema": "sales2", "description": "renamed db"})
    conn = store.get_connection("wh", box_of(settings))
    assert (conn.schema, conn.password, conn.extra) == ("sales2", SECRET, EXTRA)


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("how", sorted(SENDERS))
def test_a_new_destination_with_the_password_given_again_takes_it(
    client, csrf, store, settings, how
):
    SENDERS[how](client, csrf, STORED | {"host": "db2.internal", "password": "new-pass-123"})
    conn = store.get_connection("wh", box_of(settings))
    assert (conn.host, conn.password, conn.extra) == ("db2.internal", "new-pass-123", {})


@pytest.mark.usefixtures("stored")
def test_the_edit_form_says_when_a_blank_password_is_kept(client):
    page = client.get("/connections?edit=wh").get_data(as_text=True)
    assert page.count("blank keeps the stored one while type, host, port and login stay") == 2
    assert SECRET not in page
