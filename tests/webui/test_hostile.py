"""Hostile requests (issue 12): foreign Host names, cross-site state changes, open
redirects, malformed action bodies, values the database or the page cannot hold, and
oversized bodies. Each is refused with a 4xx and a reason, and changes nothing."""

from __future__ import annotations

import json

import pytest
from conftest import START, build_shell_dag  # noqa: I001  (tests/webui/conftest.py)
from test_actions import snapshot

from orchestrator.settings import Settings
from orchestrator.store import Store
from webui import create_app
from webui.security import allowed_hosts, host_allowed

# -- item 7: DNS rebinding: the Host allow-list ------------------------------------------

FOREIGN_HOSTS = [
    "evil.example",
    "evil.example:8080",
    "EVIL.EXAMPLE:8080",
    "127.0.0.1.evil.example",
    "127.0.0.1.evil.example:8080",
    "localhost.evil.example",
    "evil.example#127.0.0.1",
    "127.0.0.1:8080@evil.example",
    "127.0.0.1:8080:80",
    "127.0.0.1:",
    "127.0.0.1 evil.example",
    "[::1].evil.example",
    "127.0.0.2",
    "0.0.0.0:8080",
    "",
]
OWN_HOSTS = [
    "127.0.0.1",
    "127.0.0.1:8080",
    "localhost:8080",
    "LOCALHOST:8080",
    "localhost.:9000",  # an ssh tunnel may forward another port
    "[::1]:8080",
]


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_a_foreign_host_is_refused_on_every_route(client, make_dag, host):
    make_dag("etl")
    for path in ("/", "/dags/etl", "/api/v1/dags", "/api/v1/csrf", "/login"):
        response = client.get(path, headers={"Host": host})
        assert response.status_code == 400, (host, path)
        assert "Host" in response.get_data(as_text=True)


@pytest.mark.parametrize("host", OWN_HOSTS)
def test_loopback_names_with_any_port_are_answered(client, host):
    assert client.get("/api/v1/dags", headers={"Host": host}).status_code == 200


def test_a_foreign_host_cannot_act_even_with_a_token(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline"), START)
    before = snapshot(store)
    response = client.post(
        "/api/v1/dags/pipeline/runs",
        json={},
        headers={"X-CSRF-Token": csrf, "Host": "127.0.0.1.evil.example:8080"},
    )
    assert response.status_code == 400
    assert snapshot(store) == before


def test_configured_names_and_the_bound_address_are_answered(settings, store):
    app = create_app(
        settings.with_(web_host="10.1.2.3", web_allowed_hosts="ops.example.com, .corp.example"),
        store,
        login_required=False,
    )
    client = app.test_client()
    own = (
        "10.1.2.3:8080",
        "ops.example.com",
        "OPS.example.com:443",
        "ci.corp.example",
        "corp.example",
    )
    for host in own:
        assert client.get("/api/v1/dags", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", "ops.example.com.evil.example", "corp.example.evil", "10.1.2.4"):
        assert client.get("/api/v1/dags", headers={"Host": host}).status_code == 400, host


# Issue 31: the Host check against names that only look like an allowed one. Allowed:
# ops.example.com exactly, corp.example and its subdomains, an IDN name in its
# punycode (ASCII) form, the bound address and loopback.
CONFIGURED = "OPS.example.com., .corp.example, xn--bcher-kva.example"
LOOK_ALIKES = [
    "evilcorp.example",  # ends with the letters of corp.example, not under it
    "evilcorp.example:443",
    "EVILCORP.EXAMPLE",
    "evilcorp.example.",
    "xcorp.example",
    "orp.example",
    "corp.example.evil",
    "corp.example.evil.example",
    "corp.exampl",
    "xops.example.com",  # an exact name allows no prefix...
    "ps.example.com",  # ...nor a part of itself
    "ops.example.com.evil",
    "ops.example.co",
    "ops.example.com..",  # one trailing dot is the same name; two are not a name
    "ops.example.com:0",
    "ops.example.com:65536",
    "ops.example.com:99999",
    "ops.example.com:123456",
    "ops.example.com:",
    "ops.example.com:80:80",
    "ops.example.com:-1",
    "ops.example.com:+80",
    "ops.example.com:８０",  # fullwidth digits are digits to int(), not to a port
    "ops.example.com\n",
    " ops.example.com",
    "ops.example.com/",
    "user@ops.example.com",
    "b\u00fccher.example",  # an IDN arrives in its punycode form, never as Unicode
    "b\u00c3\u00bccher.example",  # its UTF-8 bytes as WSGI's latin-1 string
    "xn--bcher-kva.example.evil",
    "xn--bcher-kva.exampl",
    "ops.e\u0445ample.com",  # a Cyrillic ha for the x
    "ops.example.\u212aom",  # KELVIN SIGN: lower() makes it a "k" (op.example.kom)
    "\u212a.corp.example",  # and here a subdomain of corp.example once lowered
    "10.1.2.3.corp.example.evil",
    "[::1]:8080.evil",
]
OWN_NAMES = [
    "ops.example.com",
    "OPS.EXAMPLE.COM",
    "ops.example.com.",
    "ops.example.com.:8080",
    "ops.example.com:1",
    "ops.example.com:65535",
    "corp.example",
    "corp.example.",
    "CORP.example:8443",
    "ci.corp.example",
    "a.b.ci.corp.example:443",
    "CI.Corp.Example.",
    "xn--bcher-kva.example",
    "XN--BCHER-KVA.EXAMPLE:8443",
    "10.1.2.3",
    "10.1.2.3:8080",
    "localhost",
    "[::1]",
]


ALLOWED = allowed_hosts(
    Settings.load({}, cwd="/", web_host="10.1.2.3", web_allowed_hosts=CONFIGURED)
)


@pytest.mark.parametrize("host", LOOK_ALIKES, ids=ascii)
def test_look_alike_host_names_are_refused(host):
    assert host_allowed(host, ALLOWED) is False


@pytest.mark.parametrize("host", OWN_NAMES)
def test_the_configured_names_are_allowed_in_any_case_port_or_trailing_dot(host):
    assert host_allowed(host, ALLOWED) is True


def test_a_look_alike_suffix_is_refused_by_the_app(settings, store):
    app = create_app(settings.with_(web_allowed_hosts=".corp.example"), store)
    client = app.test_client()
    assert client.get("/api/v1/dags", headers={"Host": "ci.corp.example"}).status_code == 200
    for host in ("evilcorp.example", "evilcorp.example:8080", "xcorp.example."):
        response = client.get("/api/v1/dags", headers={"Host": host})
        assert response.status_code == 400, host
        assert "Host" in response.get_data(as_text=True)


def test_health_answers_probes_by_any_host(client, live_cluster):
    assert client.get("/health", headers={"Host": "10.0.0.7:8080"}).status_code == 200


def test_metrics_answers_any_host_only_with_the_scraper_token(settings, store):
    app = create_app(settings.with_(metrics_token="s3cret-token"), store)
    client = app.test_client()
    host = {"Host": "orchestrator.internal:8080"}
    assert client.get("/metrics", headers=host).status_code == 400
    ok = client.get("/metrics", headers=host | {"Authorization": "Bearer s3cret-token"})
    assert ok.status_code == 200
    other = client.get("/api/v1/dags", headers=host | {"Authorization": "Bearer s3cret-token"})
    assert other.status_code == 400


# -- item 7: cross-site state changes are refused, even with a valid token ----------------

CROSS_SITE = [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://localhost:8081"},  # another port is another origin
    {"Origin": "https://localhost"},  # and another scheme
    {"Origin": "garbage"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Sec-Fetch-Site": "cross-site", "Origin": "http://localhost"},
    {"Referer": "http://evil.example/page"},
    {"Referer": "http://localhost.evil.example/"},
]


@pytest.mark.parametrize("headers", CROSS_SITE, ids=lambda h: ",".join(h.values()))
def test_cross_site_actions_are_refused_with_a_valid_token(client, store, csrf, headers):
    store.save_dag(build_shell_dag("pipeline"), START)
    before = snapshot(store)
    api = client.post(
        "/api/v1/dags/pipeline/runs", json={}, headers={"X-CSRF-Token": csrf, **headers}
    )
    form = client.post(
        "/dags/pipeline/pause", data={"csrf_token": csrf, "paused": "true"}, headers=headers
    )
    for response in (api, form):
        assert response.status_code == 403
        assert "cross-site request refused" in response.get_data(as_text=True)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "http://localhost"},
        {"Origin": "http://LOCALHOST:80"},
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://localhost"},
        {"Sec-Fetch-Site": "none"},
        {"Referer": "http://localhost/dags/pipeline"},
    ],
)
def test_same_origin_actions_still_work(client, store, csrf, headers):
    store.save_dag(build_shell_dag("pipeline"), START)
    response = client.post(
        "/api/v1/dags/pipeline/pause",
        json={"paused": True},
        headers={"X-CSRF-Token": csrf, **headers},
    )
    assert response.status_code == 200, response.get_json()
    assert store.get_dag("pipeline").is_paused


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost:99999",  # a port no URL can have
        "http://localhost:x",
        "http://",  # a scheme and no host
        "http:///dags",
    ],
)
def test_an_origin_that_is_no_url_is_refused_not_an_error(client, store, csrf, origin):
    store.save_dag(build_shell_dag("pipeline"), START)
    response = client.post(
        "/api/v1/dags/pipeline/pause",
        json={"paused": True},
        headers={"X-CSRF-Token": csrf, "Origin": origin},
    )
    assert response.status_code == 403
    assert "cross-site request refused" in response.get_json()["detail"]
    assert not store.get_dag("pipeline").is_paused


def test_a_long_foreign_origin_is_named_by_its_first_100_characters(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline"), START)
    origin = "http://evil.example/" + "x" * 200
    response = client.post(
        "/api/v1/dags/pipeline/pause",
        json={"paused": True},
        headers={"X-CSRF-Token": csrf, "Origin": origin},
    )
    assert response.status_code == 403
    assert f"Origin {origin[:100]!r} is not this site" in response.get_json()["detail"]


@pytest.mark.parametrize(
    "origin", ["https://localhost", "https://localhost:443", "https://LOCALHOST.:443"]
)
def test_same_origin_over_https_with_or_without_its_default_port(settings, store, origin):
    """Behind a TLS proxy the page's origin is https://host, port 443 spelt or not."""
    store.save_dag(build_shell_dag("pipeline"), START)
    client = create_app(settings, store).test_client()
    base = "https://localhost"
    token = client.get("/api/v1/csrf", base_url=base).get_json()["csrf_token"]
    response = client.post(
        "/api/v1/dags/pipeline/pause",
        base_url=base,
        json={"paused": True},
        headers={"X-CSRF-Token": token, "Origin": origin},
    )
    assert response.status_code == 200, response.get_json()
    assert store.get_dag("pipeline").is_paused
    other = client.post(
        "/api/v1/dags/pipeline/pause",
        base_url=base,
        json={"paused": False},
        headers={"X-CSRF-Token": token, "Origin": "https://localhost:8443"},
    )
    assert other.status_code == 403


def test_an_http_1_0_action_without_a_host_header_is_judged_by_the_server_name(
    app, client, store, csrf
):
    """No Host header (HTTP/1.0): the UI's own address is the server's, and a same-origin
    Origin, or none, is let through."""
    from werkzeug.test import EnvironBuilder, run_wsgi_app

    store.save_dag(build_shell_dag("pipeline"), START)
    cookie = client.get_cookie("session").value
    for origin in (None, "http://localhost"):
        headers = {"X-CSRF-Token": csrf, "Cookie": f"session={cookie}"}
        if origin:
            headers["Origin"] = origin
        environ = EnvironBuilder(
            path="/api/v1/dags/pipeline/pause",
            method="POST",
            json={"paused": origin is None},
            headers=headers,
            environ_overrides={"SERVER_PROTOCOL": "HTTP/1.0"},
        ).get_environ()
        del environ["HTTP_HOST"]
        _, status, _ = run_wsgi_app(app.wsgi_app, environ, buffered=True)
        assert status.startswith("200"), (origin, status)
        assert store.get_dag("pipeline").is_paused is (origin is None)


def test_a_nul_in_a_repeated_query_or_form_value_is_400(client, make_dag, store, csrf):
    """Every value of a repeated parameter is checked, not only the first."""
    make_dag("etl")
    response = client.get("/api/v1/dags/etl/runs?state=success&state=a%00b")
    assert response.status_code == 400
    assert "NUL" in response.get_data(as_text=True)
    store.save_dag(build_shell_dag("pipeline"), START)
    response = client.post(
        "/dags/pipeline/pause",
        data={"csrf_token": csrf, "paused": ["true", "x\x00"]},
    )
    assert response.status_code == 400
    assert "NUL" in response.get_data(as_text=True)
    assert not store.get_dag("pipeline").is_paused


def test_web_login_always_requires_a_login_on_loopback(settings, store):
    app = create_app(settings.with_(web_login="always"), store)
    assert app.config["LOGIN_REQUIRED"]
    assert app.test_client().get("/api/v1/dags").status_code == 401


# -- item 9: open redirect after login ----------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\nSet-Cookie: x=1",
        "//evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "http://evil.example/",
        "https:evil.example",
        " /x",
        "/ /evil.example",
        "javascript:alert(1)",
        "/\x00",
    ],
)
def test_login_never_redirects_off_site(settings, store, target):
    store.add_user("ada", "long enough password", START)
    client = create_app(settings, store, login_required=True).test_client()
    page = client.get("/login").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    form = {"csrf_token": token, "username": "ada", "password": "long enough password"}
    response = client.post("/login", data=form | {"next": target})
    if "\x00" in target:
        assert response.status_code == 400
        return
    assert response.status_code == 302
    assert response.headers["Location"] == "/"


def test_login_follows_a_same_site_path(settings, store):
    store.add_user("ada", "long enough password", START)
    client = create_app(settings, store, login_required=True).test_client()
    client.get("/login")
    token = client.get("/api/v1/csrf")  # 401: not signed in yet
    assert token.status_code == 401
    page = client.get("/login?next=/%09/evil.example").get_data(as_text=True)
    assert 'name="next" value=""' in page  # an unsafe next is not even carried along
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    form = {"csrf_token": token, "username": "ada", "password": "long enough password"}
    response = client.post("/login", data=form | {"next": "/dags/etl?state=failed&page=2"})
    assert response.headers["Location"] == "/dags/etl?state=failed&page=2"


# -- item 13: malformed action bodies ----------------------------------------------------

BAD_BODIES = [
    ("/api/v1/dags/pipeline/runs", "not json", "application/json", "not valid JSON"),
    ("/api/v1/dags/pipeline/runs", '{"conf": {}}', "text/plain", "must be JSON"),
    ("/api/v1/dags/pipeline/runs", "conf=1", "application/x-www-form-urlencoded", "must be JSON"),
    ("/api/v1/dags/pipeline/runs", "[]", "application/json", "must be a JSON object"),
    ("/api/v1/dags/pipeline/runs", '{"conf": []}', "application/json", "conf: expected"),
    ("/api/v1/dags/pipeline/runs", '{"cnof": {}}', "application/json", "unknown field"),
    ("/api/v1/dags/pipeline/pause", '{"paused": false', "application/json", "not valid JSON"),
    ("/api/v1/dags/pipeline/pause", '{"paused": "false"}', "application/json", "paused: expec"),
    ("/api/v1/dags/pipeline/pause", '{"paused": 0}', "application/json", "paused: expected"),
    ("/api/v1/dags/pipeline/pause", "{}", "application/json", "missing field"),
    ("/api/v1/dags/pipeline/pause", "null", "application/json", "must be a JSON object"),
    ("/api/v1/dags/pipeline/backfill", '{"start": 1, "end": 2}', "application/json", "start:"),
    ("/api/v1/runs/{run_id}/cancel", '{"why": "x"}', "application/json", "unknown field"),
    ("/api/v1/runs/{run_id}/cancel", "not json", "text/plain", "must be JSON"),
    (
        "/api/v1/runs/{run_id}/tasks/extract/clear",
        '{"downstream": "false"}',
        "application/json",
        "downstream: expected true or false",
    ),
    ("/api/v1/runs/{run_id}/tasks/load/mark", '{"state": 1}', "application/json", "state:"),
    ("/api/v1/runs/{run_id}/tasks/load/mark", "\xff\xfe", "application/json", "not valid JSON"),
]


@pytest.mark.parametrize(("path", "body", "mimetype", "reason"), BAD_BODIES)
def test_malformed_action_bodies_are_400_and_change_nothing(
    client, store, csrf, worked_run, path, body, mimetype, reason
):
    run = worked_run()
    before = snapshot(store)
    response = client.post(
        path.format(run_id=run.run_id),
        data=body.encode("latin-1"),
        content_type=mimetype,
        headers={"X-CSRF-Token": csrf},
    )
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    assert reason in response.get_json()["detail"]
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("path", "form", "reason"),
    [
        ("/dags/pipeline/pause", {"paused": "yes"}, "form field &#39;paused&#39;"),
        ("/dags/pipeline/pause", {}, "got nothing"),
        ("/runs/{run_id}/tasks/extract/clear", {"downstream": "1"}, "&#39;downstream&#39;"),
    ],
)
def test_malformed_action_forms_are_400_and_change_nothing(
    client, store, csrf, worked_run, path, form, reason
):
    run = worked_run()
    before = snapshot(store)
    response = client.post(path.format(run_id=run.run_id), data=form | {"csrf_token": csrf})
    assert response.status_code == 400
    assert reason in response.get_data(as_text=True)
    assert snapshot(store) == before


def test_a_body_less_action_still_works(client, store, csrf, worked_run):
    run = worked_run()
    response = client.post(f"/api/v1/runs/{run.run_id}/cancel", headers={"X-CSRF-Token": csrf})
    assert response.status_code == 200
    assert store.get_run(run.run_id).state == "cancelled"


# -- item 14: values that used to answer 500 ------------------------------------------------


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_deeply_nested_json_is_400_in_the_api_and_the_form(client, store, csrf):
    data = build_shell_dag("pipeline", params={"rows": [1], "n": 1, "target": "/tmp"})
    store.save_dag(data, START)
    before = snapshot(store)
    h = {"X-CSRF-Token": csrf}
    for levels in (40, 1000, 100_000):
        body = '{"conf": {"rows": ' + deep(levels) + "}}"
        r = client.post("/api/v1/dags/pipeline/runs", data=body, content_type="application/json",
                        headers=h)  # fmt: skip
        assert r.status_code == 400, levels
        assert "nested" in r.get_json()["detail"]
        r = client.post(
            "/dags/pipeline/trigger", data={"csrf_token": csrf, "param.rows": deep(levels)}
        )
        assert r.status_code == 302  # back to the DAG page, with the reason flashed
        assert "nested" in client.get("/").get_data(as_text=True)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/dags/etl/runs?offset=99999999999999999999999",
        "/api/v1/dags/etl/runs?offset=9223372036854775808",
        "/api/v1/dags/etl/runs?limit=-99999999999999999999999",
        "/api/v1/dags/etl/runs?offset=x",
        "/api/v1/events?before=99999999999999999999999",
        "/api/v1/events?before=-1",
        "/events?before=99999999999999999999999",
        "/dags/etl?page=99999999999999999999999",
        "/dags/etl?page=9223372036854775807",
        "/api/v1/runs/{run_id}/tasks/extract/tries/1/log?offset=99999999999999999999999",
    ],
)
def test_integers_beyond_64_bits_are_400(client, make_dag, worked_run, url):
    make_dag("etl")
    run = worked_run()
    response = client.get(url.format(run_id=run.run_id))
    assert response.status_code == 400
    assert "query parameter" in response.get_data(as_text=True)


def test_the_largest_64_bit_values_still_answer(client, make_dag):
    make_dag("etl")
    assert client.get("/api/v1/dags/etl/runs?offset=9223372036854775807").status_code == 200
    assert client.get("/api/v1/events?before=9223372036854775807").status_code == 200
    assert client.get("/dags/etl?page=368934881474191032").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/dags/%00",
        "/api/v1/dags/%00",
        "/api/v1/dags/etl/runs?state=%00",
        "/runs/x%00y",
        "/api/v1/runs/x%00y/tasks/%00",
        "/events?dag_id=%00",
        "/api/v1/events?kind=a%00b",
        "/?q=%00",
        "/?tag=%00",
    ],
)
def test_nul_in_an_id_or_filter_is_400(client, make_dag, url):
    make_dag("etl")
    response = client.get(url)
    assert response.status_code == 400
    assert "NUL" in response.get_data(as_text=True)


def test_nul_in_a_login_form_is_400(settings, store):
    client = create_app(settings, store, login_required=True).test_client()
    page = client.get("/login").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    form = {"csrf_token": token, "username": "a\x00b", "password": "x"}
    assert client.post("/login", data=form).status_code == 400


@pytest.mark.parametrize(
    ("conf", "reason"),
    [
        ('{"target": "\\ud800"}', "lone surrogate"),
        ('{"target": "a\\u0000b"}', "NUL"),
        ('{"extra": NaN}', "NaN"),
        ('{"\\udfff": 1}', "lone surrogate"),
    ],
)
def test_unstorable_conf_is_400_and_nothing_is_stored(client, store, csrf, conf, reason):
    store.save_dag(build_shell_dag("pipeline", params={"target": "x", "extra": None}), START)
    before = snapshot(store)
    response = client.post(
        "/api/v1/dags/pipeline/runs",
        data='{"conf": ' + conf + "}",
        content_type="application/json",
        headers={"X-CSRF-Token": csrf},
    )
    assert response.status_code == 400
    assert reason in response.get_json()["detail"]
    assert snapshot(store) == before
    assert client.get("/dags/pipeline").status_code == 200


def test_the_store_refuses_unstorable_conf_from_any_caller(store):
    """The CLI's path (store.trigger_run) refuses the same values as the API."""
    store.save_dag(build_shell_dag("pipeline", params={"target": "x", "extra": None}), START)
    from orchestrator.errors import ConfigError

    for conf in ({"target": "\ud800"}, {"target": "\x00"}, {"extra": json.loads(deep(500))}):
        with pytest.raises(ConfigError, match="conf holds"):
            store.trigger_run("pipeline", START, conf=conf)
    assert store.list_runs(dag_id="pipeline") == []


# -- item 15: size limits --------------------------------------------------------------


def test_a_large_conf_is_refused_and_not_echoed(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline", params={"target": "x", "extra": None}), START)
    before = snapshot(store)
    big = {"conf": {"extra": "A" * 70_000}}
    response = client.post("/api/v1/dags/pipeline/runs", json=big, headers={"X-CSRF-Token": csrf})
    assert response.status_code == 400
    assert "max_conf_bytes" in response.get_json()["detail"]
    assert len(response.get_data()) < 1000  # the conf is not echoed back
    assert snapshot(store) == before


def test_max_conf_bytes_is_a_setting(settings, store, clock):
    limited = settings.with_(max_conf_bytes=100)
    store = Store(store.url, settings=limited)  # the limit travels with the store's settings
    store.save_dag(build_shell_dag("pipeline", params={"target": "x", "extra": None}), START)
    app = create_app(limited, store, clock=clock)
    client = app.test_client()
    token = client.get("/api/v1/csrf").get_json()["csrf_token"]
    h = {"X-CSRF-Token": token}
    r = client.post("/api/v1/dags/pipeline/runs", json={"conf": {"extra": "A" * 101}}, headers=h)
    assert r.status_code == 400 and "100-byte limit" in r.get_json()["detail"]
    r = client.post("/api/v1/dags/pipeline/runs", json={"conf": {"extra": "A" * 50}}, headers=h)
    assert r.status_code == 201
    store.dispose()


def test_request_bodies_beyond_the_cap_are_413_before_parsing(settings, store):
    store.add_user("ada", "long enough password", START)
    app = create_app(settings.with_(web_max_body_bytes=10_000), store, login_required=True)
    client = app.test_client()
    before = snapshot(store)
    big = "x" * 50_000
    r = client.post("/login", data={"username": "ada", "password": big})
    assert r.status_code == 413
    r = client.post("/api/v1/dags/x/runs", data=big, content_type="application/json")
    assert r.status_code == 413
    assert snapshot(store) == before


def test_a_trigger_form_keeps_conf_out_of_the_session_cookie(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline", params={"target": "x", "n": 1}), START)
    value = "V" * 6000
    response = client.post(
        "/dags/pipeline/trigger", data={"csrf_token": csrf, "param.target": value}
    )
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert len(cookie) < 1500, len(cookie)
    [run] = store.list_runs(dag_id="pipeline")
    assert run.conf["target"] == value
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert f"Triggered {run.run_id} with params" in page


def test_a_long_error_is_cut_before_it_is_flashed(client, store, csrf):
    store.save_dag(build_shell_dag("pipeline", params={"target": "x", "n": 1}), START)
    response = client.post(
        "/dags/pipeline/trigger", data={"csrf_token": csrf, "param.n": "9" * 5000}
    )
    assert len(response.headers["Set-Cookie"]) < 1500
    assert store.list_runs(dag_id="pipeline") == []
