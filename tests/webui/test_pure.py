"""Pure helpers of the UI: schedule words, graph layout, Gantt bars, params, logs."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from itertools import combinations
from types import SimpleNamespace as NS

import networkx as nx
import pytest

from orchestrator.errors import ConfigError
from webui.cron_words import cron_to_words, schedule_in_words
from webui.gantt import gantt
from webui.graph_layout import (
    _proper,
    count_crossings,
    from_json,
    layers_of,
    layout,
    order_layers,
    to_json,
)
from webui.logs import read_log, resolve
from webui.params_form import fields_for, parse_params

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("0 2 * * *", "At 02:00"),
        ("*/15 * * * *", "Every 15 minutes"),
        ("* * * * *", "Every minute"),
        ("0 * * * *", "Every hour"),
        ("5 * * * *", "Every hour at minute 5"),
        ("0 */6 * * *", "Every 6 hours"),
        ("30 6 * * 1-5", "At 06:30, Monday to Friday"),
        ("0 9,17 * * mon-fri", "At 09:00 and 17:00, Monday to Friday"),
        ("0 0 1 * *", "At 00:00, on the 1st of the month"),
        ("0 0 * 1,7 *", "At 00:00, in January and July"),
        ("0 3 * * 0", "At 03:00, Sunday"),
        ("0 0 L * *", "cron 0 0 L * *"),  # unknown syntax: shown as is, never wrong
    ],
)
def test_cron_in_words(expr, words):
    assert cron_to_words(expr) == words


def test_schedule_in_words_per_kind():
    assert schedule_in_words("cron", "0 2 * * *", None, "Europe/Berlin") == (
        "At 02:00, Europe/Berlin"
    )
    assert schedule_in_words("interval", None, timedelta(hours=2), "UTC") == "Every 2 hours"
    assert schedule_in_words("interval", None, timedelta(days=1), "UTC") == "Every day"
    assert schedule_in_words("once", None, None, "UTC") == "Once"
    assert schedule_in_words("none", None, None, "UTC") == "Manual only"


def test_layers_point_left_to_right():
    g = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    assert layers_of(g) == {"a": 0, "b": 1, "c": 2}
    lay = layout(g)
    x = {n.id: n.x for n in lay.nodes}
    assert x["a"] < x["b"] < x["c"]
    assert lay.edges[1].path.count("L") == 1  # a->c runs straight through b's layer


def test_ordering_removes_needless_crossings():
    # name order would cross: a->z, b->y, c->x; barycenters straighten all three
    g = nx.DiGraph([("a", "z"), ("b", "y"), ("c", "x")])
    proper, level = _proper(g, layers_of(g))
    naive = [["a", "b", "c"], ["x", "y", "z"]]
    assert count_crossings(proper, naive) == 3
    assert count_crossings(proper, order_layers(proper, level)) == 0
    assert layout(g).crossings == 0


def test_a_wide_fan_out_has_no_crossings_and_fits():
    g = nx.DiGraph([("start", f"t{i}") for i in range(12)] + [(f"t{i}", "end") for i in range(12)])
    lay = layout(g)
    assert lay.crossings == 0
    assert all(n.y >= 0 and n.y + n.h <= lay.height for n in lay.nodes)
    assert layout(nx.DiGraph()).nodes == []


def test_crossings_are_counted_as_every_pair_of_edges_would():
    rng = random.Random(12)
    for _ in range(200):
        order = [[f"{k}.{i}" for i in range(rng.randint(1, 8))] for k in range(rng.randint(2, 4))]
        g = nx.DiGraph()
        g.add_nodes_from(n for layer in order for n in layer)
        for left, right in zip(order, order[1:], strict=False):
            g.add_edges_from((u, v) for u in left for v in right if rng.random() < 0.4)
        for layer in order:
            rng.shuffle(layer)
        pairs = 0  # the definition: (a - c) * (b - d) < 0 for two edges between two layers
        for left, right in zip(order, order[1:], strict=False):
            pos = {n: i for i, n in enumerate(left)} | {n: i for i, n in enumerate(right)}
            edges = [(pos[u], pos[v]) for u, v in g.edges if u in left and v in right]
            pairs += sum(1 for (a, b), (c, d) in combinations(edges, 2) if (a - c) * (b - d) < 0)
        assert count_crossings(g, order) == pairs


def test_a_layout_survives_its_json_and_an_old_format_does_not():
    g = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("a", "d")])
    lay = layout(g)
    assert from_json(to_json(lay)) == lay
    assert from_json('{"format": 0, "nodes": []}') is None


def test_gantt_splits_queued_and_running_time():
    run = NS(start_date=T0)
    tis = [NS(task_id="a", state="success", end_date=T0 + timedelta(seconds=10)),
           NS(task_id="b", state="success", end_date=T0 + timedelta(seconds=40))]  # fmt: skip
    tries = [
        NS(task_id="a", map_index=-1, try_number=1, state="success", start_date=T0, end_date=T0 + timedelta(seconds=10)),
        NS(task_id="b", map_index=-1, try_number=1, state="failed", start_date=T0 + timedelta(seconds=20), end_date=T0 + timedelta(seconds=25)),
        NS(task_id="b", map_index=-1, try_number=2, state="success", start_date=T0 + timedelta(seconds=30), end_date=T0 + timedelta(seconds=40)),
    ]  # fmt: skip
    chart = gantt(run, tis, tries, ["a", "b"], {"b": ("a",)}, T0 + timedelta(minutes=5))
    a, b = chart.rows
    assert [bar.kind for bar in a.bars] == ["running"]
    assert [(bar.kind, bar.state) for bar in b.bars] == [
        ("queued", "queued"),  # 10s..20s: a had finished, no worker had b yet
        ("running", "failed"),
        ("queued", "queued"),  # retry backoff 25s..30s
        ("running", "success"),
    ]
    assert chart.seconds == 40
    assert b.bars[0].x == pytest.approx(a.bars[0].x + a.bars[0].w)


def test_gantt_draws_tries_in_try_order_whatever_order_they_come_in():
    run = NS(start_date=T0)
    tis = [NS(task_id="a", state="success", end_date=T0 + timedelta(seconds=10)),
           NS(task_id="b", state="success", end_date=T0 + timedelta(seconds=40))]  # fmt: skip
    tries = [
        NS(task_id="a", map_index=-1, try_number=1, state="success", start_date=T0, end_date=T0 + timedelta(seconds=10)),
        NS(task_id="b", map_index=-1, try_number=1, state="failed", start_date=T0 + timedelta(seconds=20), end_date=T0 + timedelta(seconds=25)),
        NS(task_id="b", map_index=-1, try_number=2, state="success", start_date=T0 + timedelta(seconds=30), end_date=T0 + timedelta(seconds=40)),
    ]  # fmt: skip
    now = T0 + timedelta(minutes=5)
    chart = gantt(run, tis, tries, ["a", "b"], {"b": ("a",)}, now)
    assert gantt(run, tis, tries[::-1], ["a", "b"], {"b": ("a",)}, now) == chart
    assert [row.y for row in chart.rows] == [22, 48]
    assert [bar.title for bar in chart.rows[1].bars] == [
        "b: queued 10 s", "b: running 5.0 s (failed)", "b: queued 5.0 s", "b: running 10 s (success)"
    ]  # fmt: skip


def test_params_form_round_trip():
    params = {"n": 3, "ratio": 0.5, "name": "x", "dry": True, "ids": [1, 2]}
    kinds = [f.kind for f in fields_for(params)]
    assert kinds == ["number", "number", "text", "checkbox", "json"]
    form = {"param.n": "4", "param.ratio": "1.5", "param.name": "y", "param.ids": "[3]"}
    assert parse_params(params, form) == {
        "n": 4,
        "ratio": 1.5,
        "name": "y",
        "dry": False,
        "ids": [3],
    }
    with pytest.raises(ConfigError, match="param 'ids': expected JSON"):
        parse_params(params, {"param.ids": "[oops"})


def test_logs_stay_inside_the_log_folder(tmp_path):
    (tmp_path / "logs" / "d").mkdir(parents=True)
    (tmp_path / "secret").write_text("no")
    (tmp_path / "logs" / "d" / "1.log").write_text("abcdef")
    logs = str(tmp_path / "logs")
    assert resolve(logs, "../secret") is None
    assert read_log(logs, "../secret").missing
    assert read_log(logs, "d/1.log", limit=3).text == "def"  # the tail
    chunk = read_log(logs, "d/1.log", offset=2)
    assert (chunk.text, chunk.offset, chunk.next_offset) == ("cdef", 2, 6)
