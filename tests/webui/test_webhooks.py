"""A WebhookWatcher's endpoint (issue 30): a body signed with the connection's secret
becomes one asset event; a wrong signature, a timestamp outside the replay window or a
body that is not a JSON object is refused with the reason recorded; a replayed
delivery makes no second event; the watchers page and API show the counts."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime

import pytest

from orchestrator.authoring.credentials import Connection
from orchestrator.engine.processor import DagProcessor
from orchestrator.store.credentials.secret_box import box_of

SECRET = "s3cret-for-tests"
DAG = """
from orchestrator import DAG, Asset, task
from orchestrator.watchers import WebhookWatcher

orders = Asset("s3://lake/orders", watchers=[WebhookWatcher(conn_id="hook", path="orders")])

with DAG("consumer", schedule=orders) as dag:
    @task
    def consume(ctx):
        return 1
"""


@pytest.fixture
def hook(store, settings, dags_dir):
    (dags_dir / "consumer.py").write_text(DAG)
    DagProcessor(store, settings).scan(datetime.now(UTC))
    store.add_connection(Connection("hook", "http", password=SECRET), datetime.now(UTC),
                         box_of(settings))  # fmt: skip


def _signed(body: bytes, *, secret: str = SECRET, at: float | None = None) -> dict[str, str]:
    stamp = str(int(at if at is not None else time.time()))
    mac = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"Orchestrator-Signature": f"t={stamp},v1={mac}", "Content-Type": "application/json"}


def _post(client, body: bytes, headers: dict[str, str], delivery: str = "d-1"):
    return client.post(
        "/hooks/orders", data=body, headers=headers | {"Orchestrator-Delivery": delivery}
    )


def test_a_signed_delivery_is_one_event_and_its_replay_is_a_duplicate(client, store, hook):
    body = json.dumps({"order": 7}).encode()
    r = _post(client, body, _signed(body))  # no login, no CSRF token: the signature
    assert r.status_code == 202, r.get_json()
    assert [e.extra for e in store.asset_events("s3://lake/orders")] == [{"order": 7}]
    again = _post(client, body, _signed(body))
    assert again.status_code == 200 and again.get_json()["status"] == "duplicate"
    assert len(store.asset_events("s3://lake/orders")) == 1
    [w] = store.watcher_states()
    assert (w.kind, w.messages, w.rejected) == ("webhook", 1, 0)


@pytest.mark.parametrize(
    "headers, reason",
    [
        (lambda b: _signed(b, secret="wrong"), "signature does not match"),
        (lambda b: _signed(b, at=time.time() - 301), "outside the 300s replay window"),
        (lambda b: {"Orchestrator-Signature": "garbage"}, "no valid Orchestrator-Signature"),
        (lambda b: {}, "no valid Orchestrator-Signature"),
    ],
)
def test_a_bad_signature_or_an_old_timestamp_is_refused_and_recorded(
    client, store, hook, headers, reason
):
    body = b'{"order": 1}'
    r = _post(client, body, headers(body))
    assert r.status_code == 401 and reason in r.get_json()["detail"]
    assert store.asset_events("s3://lake/orders") == []
    [w] = store.watcher_states()
    assert w.rejected == 1 and w.messages == 0
    [e] = store.events(kind="watcher_rejected", limit=5)
    assert reason in e.message


def test_a_signed_body_that_is_not_a_json_object_is_rejected_with_its_reason(client, store, hook):
    for i, body in enumerate((b"not json", b"[1, 2]", b"x" * 70000)):
        r = _post(client, body, _signed(body), delivery=f"bad-{i}")
        assert r.status_code in (400, 413), r.status_code
    assert store.asset_events("s3://lake/orders") == []
    reasons = " | ".join(e.message for e in store.events(kind="watcher_rejected", limit=5))
    assert "is not JSON" in reasons and "not an object" in reasons


def test_an_unknown_webhook_path_is_404(client, hook):
    body = b"{}"
    assert client.post("/hooks/nope", data=body, headers=_signed(body)).status_code == 404


def test_the_watchers_page_and_api_show_the_counts(client, store, hook):
    body = b'{"order": 2}'
    _post(client, body, _signed(body))
    _post(client, body, _signed(body, secret="wrong"), delivery="d-2")
    page = client.get("/watchers")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "s3://lake/orders" in html and "webhook" in html
    assert '<td class="watcher-messages">1</td>' in html
    assert '<td class="watcher-rejected">1</td>' in html
    api = client.get("/api/v1/watchers").get_json()["watchers"]
    assert [(w["kind"], w["messages"], w["rejected"]) for w in api] == [("webhook", 1, 1)]


def test_a_new_event_wakes_the_scheduler_and_a_duplicate_or_a_refusal_does_not(
    settings, store, clock, hook
):
    """standalone passes its scheduler's event: the consuming run starts at once, not
    at the scheduler's next poll (scheduler_interval, a second by default)."""
    import threading

    from webui import create_app

    wake = threading.Event()
    client = create_app(settings, store, clock=clock, wake_scheduler=wake).test_client()
    body = b'{"order": 3}'
    assert _post(client, body, _signed(body)).status_code == 202
    assert wake.is_set()
    wake.clear()
    assert _post(client, body, _signed(body)).get_json()["status"] == "duplicate"
    assert _post(client, body, _signed(body, secret="wrong"), "d-2").status_code == 401
    assert _post(client, b"[1]", _signed(b"[1]"), "d-3").status_code == 400
    assert not wake.is_set()


@pytest.mark.parametrize(
    "database_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_web_server_of_its_own_wakes_the_postgresql_schedulers_with_a_notify(
    settings, store, clock, hook
):
    """``orchestrator webserver`` apart from the scheduler: the webhook's event is a
    NOTIFY on the channel the schedulers listen on."""
    import threading

    from orchestrator.engine.wakeup import FINISHED, Listener
    from webui import create_app

    assert store.is_postgres  # LISTEN/NOTIFY is PostgreSQL's (on SQLite: in-process)
    wake = threading.Event()
    listener = Listener(store.url, {FINISHED: wake}).start()
    try:
        assert listener.connected.wait(10) and wake.wait(10)  # it wakes once on connecting
        wake.clear()
        client = create_app(settings, store, clock=clock).test_client()
        body = b'{"order": 4}'
        assert _post(client, body, _signed(body)).status_code == 202
        assert wake.wait(10)
    finally:
        listener.stop()
