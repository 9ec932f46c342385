"""Issue 24 item 12: one strict-input rule for every JSON the API accepts (the rule a
run's conf already had): no lone surrogate, no NUL, no NaN/Infinity, no nesting deeper
than 32 levels, and integers a BIGINT holds, in any field of any body, an asset event's
extra (API and webhook) included. Each is 400 with the field named, and stores nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from test_actions import snapshot  # noqa: I001  (tests/webui/test_actions.py)
from test_webhooks import DAG as HOOK_DAG
from test_webhooks import _signed, hook  # noqa: F401  (hook: a fixture)

from orchestrator.engine.processor import DagProcessor

URI = "s3://lake/orders"
DEEP = "[" * 60 + "]" * 60
HOSTILE = {
    "a lone surrogate": '"\\ud800"',
    "a lone surrogate in a key": '{"\\udfff": 1}',
    "a NUL character": '"a\\u0000b"',
    "nested 60 deep": DEEP,
    "NaN": "NaN",
    "Infinity": '{"x": -Infinity}',
}
# (path, body template with {v} where the hostile value goes, the field named)
ROUTES = [
    ("/api/v1/assets/events", '{"uri": "URI", "extra": {"k": {v}}}'.replace("URI", URI), "extra"),
    ("/api/v1/dags/consumer/runs", '{"conf": {"k": {v}}}', "conf"),
    ("/api/v1/connections", '{"conn_id": "c1", "conn_type": "http", "extra": {"k": {v}}}',
     "extra"),
]  # fmt: skip


@pytest.fixture
def assets_dag(store, settings, dags_dir):
    (dags_dir / "consumer.py").write_text(HOOK_DAG)
    DagProcessor(store, settings).scan(datetime.now(UTC))


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize(("path", "template", "field"), ROUTES)
def test_every_json_body_refuses_what_conf_refuses(
    client, store, csrf, assets_dag, path, template, field, kind
):
    before = snapshot(store)
    body = template.replace("{v}", HOSTILE[kind])
    response = client.post(
        path, data=body, headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"}
    )
    assert response.status_code == 400, (path, kind, response.get_data(as_text=True)[:300])
    assert field in response.json["detail"]
    assert snapshot(store) == before


@pytest.mark.parametrize("kind", ["a lone surrogate", "a NUL character"])
def test_string_fields_refuse_them_too(client, store, csrf, kind):
    before = snapshot(store)
    body = '{"key": "k", "value": "ok", "description": V}'.replace("V", HOSTILE[kind])
    response = client.post("/api/v1/variables", data=body,
                           headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"})  # fmt: skip
    assert response.status_code == 400 and "description" in response.json["detail"]
    assert snapshot(store) == before


def test_an_integer_beyond_64_bits_in_a_body_is_400(client, store, csrf, assets_dag):
    run = store.trigger_run("consumer", datetime.now(UTC))
    before = snapshot(store)
    response = client.post(
        f"/api/v1/runs/{run.run_id}/tasks/consume/clear",
        data='{"map_index": 9223372036854775808}',
        headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"},
    )
    assert response.status_code == 400 and "map_index" in response.json["detail"]
    assert snapshot(store) == before


def test_a_good_extra_is_still_recorded(client, store, csrf, assets_dag):
    deep_ok = json.loads("[" * 31 + "]" * 31)
    response = client.post("/api/v1/assets/events", json={"uri": URI, "extra": {"k": deep_ok}},
                           headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert response.status_code == 201, response.get_json()


@pytest.mark.usefixtures("hook")
@pytest.mark.parametrize("kind", ["a lone surrogate", "nested 60 deep"])
def test_a_signed_webhook_message_is_held_to_the_same_rule(client, store, kind):
    body = ('{"k": ' + HOSTILE[kind] + "}").encode()
    response = client.post("/hooks/orders", data=body, headers=_signed(body))
    assert response.status_code == 400, response.get_json()
    assert kind.split()[-1] in response.get_json()["detail"]
    assert store.asset_events(URI) == []


@pytest.mark.parametrize("stamp", ["1" * 400, "\u00b2\u00b3", "9" * 13])
@pytest.mark.usefixtures("hook")
def test_a_webhook_timestamp_that_is_no_unix_time_is_401_not_500(client, stamp):
    headers = {"Orchestrator-Signature": f"t={stamp},v1=00", "Content-Type": "application/json"}
    response = client.post("/hooks/orders", data=b"{}", headers=headers)
    assert response.status_code == 401, response.get_data(as_text=True)[:300]
