"""The DAG list's filters, sorting, pages and bulk pause (issue 27 item 7), on both
backends: what the page and /api/v1/dags show, each bad parameter a 400 naming it, and
the bulk action CSRF-checked and all-or-nothing."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from conftest import START  # noqa: I001  (tests/webui/conftest.py)
from sqlalchemy import func, select

from orchestrator.store.core import models as m


def ids(client, query: str = "") -> list[str]:
    response = client.get("/" + query)
    assert response.status_code == 200, response.get_data(as_text=True)
    return re.findall(r'data-dag-id="([^"]+)"', response.get_data(as_text=True))


@pytest.fixture
def fleet(store, make_dag, make_runs, set_next_fire):
    """a_ok (last run success), b_failed (last run failed), c_running (a run running),
    d_paused (no runs), e_none (no runs, no next fire); next fires differ."""
    owners = {"a_ok": "zoe", "b_failed": "ann", "c_running": "ann"}
    for dag_id in ("a_ok", "b_failed", "c_running", "d_paused", "e_none"):
        args = {"default_args": {"owner": owners[dag_id]}} if dag_id in owners else {}
        make_dag(dag_id, tags=["fin"] if dag_id < "c" else ["ops%"], **args)
    make_runs("a_ok", ["failed", "success"])  # failed once, then fine: not "failed"
    make_runs("b_failed", ["success", "success", "failed"])  # latest run is the latest hour
    make_runs("c_running", ["running"])
    store.set_paused("d_paused", True, START)
    set_next_fire("a_ok", START + timedelta(days=3))
    set_next_fire("c_running", START + timedelta(days=1))
    set_next_fire("d_paused", START + timedelta(days=2))


def test_state_filters(client, fleet):
    assert ids(client) == ["a_ok", "b_failed", "c_running", "d_paused", "e_none"]
    assert ids(client, "?state=failed") == ["b_failed"]
    assert ids(client, "?state=running") == ["c_running"]
    assert ids(client, "?state=paused") == ["d_paused"]
    assert ids(client, "?state=active") == ["a_ok", "b_failed", "c_running", "e_none"]
    assert ids(client, "?state=active&tag=fin&q=B_") == ["b_failed"]
    assert len(ids(client, "?state=&q=&tag=")) == 5  # a form's blank fields: no filter


def test_owners_shown_filtered_and_sorted(client, fleet, store):
    assert store.get_dag("b_failed").owners == ("ann",)
    assert store.get_dag("e_none").owners == ()
    assert ids(client, "?owner=ann") == ["b_failed", "c_running"]
    assert ids(client, "?owner=an") == []  # an owner is matched whole
    assert ids(client, "?owner=ann&state=failed") == ["b_failed"]
    assert ids(client, "?sort=owner") == ["b_failed", "c_running", "a_ok", "d_paused", "e_none"]
    assert ids(client, "?sort=owner&order=desc") == [
        "a_ok", "c_running", "b_failed", "e_none", "d_paused",
    ]  # fmt: skip
    html = client.get("/").get_data(as_text=True)
    assert '<option value="zoe">zoe</option>' in html  # the owner filter lists every owner
    assert [d["owners"] for d in client.get("/api/v1/dags?owner=zoe").get_json()["dags"]] == [
        ["zoe"]
    ]


def test_a_dag_without_owners_keeps_its_serialized_form():
    from conftest import build_dag

    assert "owners" not in build_dag("plain")
    assert build_dag("owned", default_args={"owner": "ann"})["owners"] == ["ann"]


def test_a_tag_is_matched_whole_not_as_a_pattern(client, fleet):
    assert ids(client, "?tag=ops%25") == ["c_running", "d_paused", "e_none"]
    assert ids(client, "?tag=%25") == []  # "%" is no wildcard
    assert ids(client, "?tag=fi") == []  # part of a tag is not the tag


def test_sorting(client, fleet):
    assert ids(client, "?sort=next_run") == ["c_running", "d_paused", "a_ok", "b_failed", "e_none"]
    # descending: latest first, DAGs without one still last
    assert ids(client, "?sort=next_run&order=desc") == [
        "a_ok", "d_paused", "c_running", "e_none", "b_failed",
    ]  # fmt: skip
    # last run: b_failed's is 2 h after START, a_ok's 1 h, c_running's at START
    assert ids(client, "?sort=last_run&order=desc")[:3] == ["b_failed", "a_ok", "c_running"]
    assert ids(client, "?sort=last_run")[:3] == ["c_running", "a_ok", "b_failed"]
    assert ids(client, "?sort=dag_id&order=desc") == [
        "e_none", "d_paused", "c_running", "b_failed", "a_ok",
    ]  # fmt: skip
    html = client.get("/?sort=last_run").get_data(as_text=True)
    assert 'aria-sort="ascending"' in html
    assert "order=desc" in html  # the sorted column's header flips the order


def test_pages(client, fleet):
    assert ids(client, "?per_page=2") == ["a_ok", "b_failed"]
    html = client.get("/?per_page=2&page=2").get_data(as_text=True)
    assert re.findall(r'data-dag-id="([^"]+)"', html) == ["c_running", "d_paused"]
    assert "page 2 of 3" in html and "2 shown of 5" in html
    assert "page=3" in html and "page=1" not in html.split("page-prev")[0][-300:]
    assert ids(client, "?per_page=2&page=9") == []
    body = client.get("/api/v1/dags?per_page=2&page=3&state=active").get_json()
    assert [d["dag_id"] for d in body["dags"]] == []  # 4 active DAGs: two pages
    body = client.get("/api/v1/dags?per_page=3&state=active").get_json()
    assert [d["dag_id"] for d in body["dags"]] == ["a_ok", "b_failed", "c_running"]
    assert body["total_entries"] == 4
    assert len(client.get("/api/v1/dags").get_json()["dags"]) == 5  # unpaged, as before


@pytest.mark.parametrize(
    "query, name",
    [
        ("state=broken", "state"),
        ("state=FAILED", "state"),
        ("sort=owner_id", "sort"),
        ("owner=" + "o" * 101, "owner"),
        ("owner=a%02", "owner"),
        ("order=up", "order"),
        ("page=0", "page"),
        ("page=x", "page"),
        ("page=99999999999999999999", "page"),
        ("per_page=0", "per_page"),
        ("per_page=201", "per_page"),
        ("q=" + "x" * 251, "q"),
        ("tag=a%01b", "tag"),
        ("tag=" + "t" * 101, "tag"),
    ],
)
def test_bad_parameters_are_400_naming_them(client, fleet, query, name):
    for path in ("/", "/api/v1/dags"):
        response = client.get(f"{path}?{query}")
        assert response.status_code == 400, (path, query)
        assert f"query parameter '{name}'" in html.unescape(response.get_data(as_text=True))


def events(store, kind: str) -> list[str]:
    e = m.events
    with store.read() as conn:
        return sorted(conn.execute(select(e.c.dag_id).where(e.c.kind == kind)).scalars())


def paused(store) -> dict[str, bool]:
    return {d.dag_id: d.is_paused for d in store.list_dags()}


def test_bulk_pause_and_unpause(client, store, csrf, fleet):
    assert events(store, "dag_paused") == ["d_paused"]  # the fixture's
    form = {"csrf_token": csrf, "paused": "true", "dag_id": ["a_ok", "b_failed", "d_paused"]}
    form["back"] = "?state=active&page=1"
    response = client.post("/dags/bulk-pause", data=form)
    assert response.status_code == 302
    assert response.headers["Location"].endswith("/?state=active&page=1")
    assert paused(store) == {"a_ok": True, "b_failed": True, "c_running": False,
                             "d_paused": True, "e_none": False}  # fmt: skip
    assert events(store, "dag_paused") == ["a_ok", "b_failed", "d_paused"]  # d_paused: once
    assert "2 DAGs paused: a_ok, b_failed; 1 already paused." in client.get("/").get_data(
        as_text=True
    )
    form = {"csrf_token": csrf, "paused": "false", "dag_id": ["a_ok", "d_paused"]}
    client.post("/dags/bulk-pause", data=form)
    assert paused(store)["a_ok"] is False and paused(store)["d_paused"] is False
    assert paused(store)["b_failed"] is True
    assert events(store, "dag_unpaused") == ["a_ok", "d_paused"]


def test_bulk_pause_is_all_or_nothing(client, store, csrf, fleet):
    before = paused(store)
    form = {"csrf_token": csrf, "paused": "true", "dag_id": ["a_ok", "no_such_dag"]}
    client.post("/dags/bulk-pause", data=form)
    assert paused(store) == before
    assert "no DAG with dag_id &#39;no_such_dag&#39;" in client.get("/").get_data(as_text=True)


@pytest.mark.parametrize(
    "form, status",
    [
        ({"paused": "true", "dag_id": ["a_ok"]}, 400),  # no CSRF token
        ({"csrf_token": "forged", "paused": "true", "dag_id": ["a_ok"]}, 400),
        ({"csrf_token": None, "paused": "maybe", "dag_id": ["a_ok"]}, 400),
        ({"csrf_token": None, "paused": "true"}, 400),  # nothing checked
        ({"csrf_token": None, "paused": "true", "dag_id": ["a_ok"] * 501}, 400),
    ],
)
def test_bulk_pause_refuses_without_csrf_or_with_bad_fields(
    client, store, csrf, fleet, form, status
):
    if "csrf_token" in form and form["csrf_token"] is None:
        form = form | {"csrf_token": csrf}
    with store.read() as conn:
        before = conn.execute(select(func.count()).select_from(m.events)).scalar_one()
    assert client.post("/dags/bulk-pause", data=form).status_code == status
    assert client.get("/dags/bulk-pause").status_code in (404, 405)  # no GET changes anything
    assert paused(store)["a_ok"] is False
    with store.read() as conn:
        assert conn.execute(select(func.count()).select_from(m.events)).scalar_one() == before


def test_bulk_pause_does_not_redirect_elsewhere(client, store, csrf, fleet):
    for back in ("//evil.example/", "https://evil.example/", "?x=1\r\nSet-Cookie: a=b"):
        form = {"csrf_token": csrf, "paused": "true", "dag_id": ["a_ok"], "back": back}
        response = client.post("/dags/bulk-pause", data=form)
        assert response.headers["Location"] in ("/", "http://localhost/"), back
