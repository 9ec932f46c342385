"""Issue 24 item 11: an integer in a path beyond what the database holds (64 bits)
answers 404, never 500, on every route with an integer in its path, HTML and API."""

from __future__ import annotations

import re

import pytest
from werkzeug.routing import IntegerConverter

HUGE = ["9223372036854775808", "18446744073709551616", "1" + "0" * 40]


def _integer_routes(app):
    for rule in app.url_map.iter_rules():
        names = [n for n, conv in rule._converters.items() if isinstance(conv, IntegerConverter)]
        if names:
            yield rule, names


def _fill(rule, names, value: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[-1]
        return value if name in names else "pipeline"

    return re.sub(r"<([^>]+)>", one, rule.rule)


def test_the_app_has_integer_routes_html_and_api(app):
    paths = [rule.rule for rule, _ in _integer_routes(app)]
    assert any(p.startswith("/api/") for p in paths)
    assert any(not p.startswith("/api/") for p in paths)


@pytest.mark.parametrize("value", HUGE)
def test_a_path_integer_beyond_64_bits_is_404_on_every_route(app, client, make_dag, value):
    make_dag("pipeline")
    checked = 0
    for rule, names in _integer_routes(app):
        path = _fill(rule, names, value)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            response = client.open(path, method=method)
            assert response.status_code in (400, 404), (method, path, response.status_code)
            checked += 1
    assert checked >= 5


def test_the_largest_64_bit_integer_still_reaches_the_view(app, client, make_dag):
    make_dag("pipeline")
    response = client.get("/api/v1/assets/9223372036854775807")
    assert response.status_code == 404
    assert "9223372036854775807" in response.json["detail"]  # the view's own answer
