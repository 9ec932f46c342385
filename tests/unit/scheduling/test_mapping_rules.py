"""The pure expansion rules of runtime task mapping (scheduling/mapping.py)."""

from __future__ import annotations

import pytest

from orchestrator.scheduling.mapping import (
    BadItem,
    MapError,
    collect,
    describe,
    map_items,
    resolve,
    task_sources,
)


def _expand(**args):
    return {"kind": "expand", "args": [[k, v] for k, v in args.items()], "partial": {}}


def test_one_list_gives_one_item_per_value_in_order():
    spec = _expand(path={"task": "ls"})
    assert map_items(spec, {"path": ["a", "b", "c"]}, limit=10, task_id="t") == [
        {"path": "a"},
        {"path": "b"},
        {"path": "c"},
    ]


def test_several_arguments_give_the_cross_product_last_fastest():
    spec = _expand(a={"literal": [1, 2]}, b={"param": "p"}, c={"task": "x"})
    items = map_items(spec, {"a": [1, 2], "b": ["x", "y", "z"], "c": [True]}, limit=6, task_id="t")
    assert len(items) == 6
    assert items[0] == {"a": 1, "b": "x", "c": True}
    assert items[1] == {"a": 1, "b": "y", "c": True}
    assert items[5] == {"a": 2, "b": "z", "c": True}


def test_empty_list_gives_no_items_and_empty_factor_empties_the_product():
    assert map_items(_expand(a={"task": "s"}), {"a": []}, limit=1, task_id="t") == []
    spec = _expand(a={"literal": [1, 2]}, b={"task": "s"})
    assert map_items(spec, {"a": [1, 2], "b": []}, limit=1, task_id="t") == []


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ({"a": 1}, "an object"),
        ("abc", "a string"),
        (3, "a number"),
        (None, "null"),
        (True, "a boolean"),
    ],
)
def test_a_value_that_is_not_a_list_is_refused_naming_task_and_source(value, kind):
    with pytest.raises(MapError) as err:
        map_items(_expand(path={"task": "list_files"}), {"path": value}, limit=10, task_id="load")
    assert str(err.value).startswith("mapped task 'load': cannot expand over list_files")
    assert kind in str(err.value) and "not a list" in str(err.value)


def test_more_items_than_the_limit_names_length_limit_and_source():
    with pytest.raises(
        MapError, match=r"'load': 11 items from list_files is more than max_map_length \(10\)"
    ):
        map_items(
            _expand(p={"task": "list_files"}), {"p": list(range(11))}, limit=10, task_id="load"
        )
    assert (
        len(map_items(_expand(p={"task": "s"}), {"p": list(range(10))}, limit=10, task_id="x"))
        == 10
    )


def test_a_cross_product_over_the_limit_names_each_factor():
    spec = _expand(a={"literal": [1, 2, 3]}, b={"param": "n"})
    with pytest.raises(MapError) as err:
        map_items(spec, {"a": [1, 2, 3], "b": list(range(4))}, limit=10, task_id="t")
    text = str(err.value)
    assert "12 items from a from a literal list (3) x b from param 'n' (4)" in text
    assert "max_map_length (10)" in text


def test_expand_kwargs_takes_a_list_of_objects():
    spec = {"kind": "expand_kwargs", "args": [["*", {"task": "pairs"}]], "partial": {}}
    assert map_items(spec, {"*": [{"x": 1}, {"x": 2, "y": 3}]}, limit=5, task_id="t") == [
        {"x": 1},
        {"x": 2, "y": 3},
    ]
    # issue 25, as Airflow: an item that is not an object fails its own instance only
    items = map_items(spec, {"*": [{"x": 1}, 5, {1: "a"}, {"y": 2}]}, limit=5, task_id="t")
    assert items[0] == {"x": 1} and items[3] == {"y": 2}
    assert isinstance(items[1], BadItem) and "item 1 is a number (5)" in items[1].error
    assert isinstance(items[2], BadItem) and "item 2 is an object" in items[2].error
    assert "mapped task 't': expand_kwargs over pairs" in items[1].error
    with pytest.raises(MapError, match="more than max_map_length"):
        map_items(spec, {"*": [{}] * 6}, limit=5, task_id="t")


def test_resolve_reads_literals_params_and_results():
    spec = _expand(a={"literal": [1]}, b={"param": "p"}, c={"task": "s"})
    assert resolve(spec, {"p": [2]}, {"s": [3]}) == {"a": [1], "b": [2], "c": [3]}
    assert resolve(spec, {}, {}) == {"a": [1], "b": None, "c": None}


def test_sources_collect_and_describe():
    spec = _expand(a={"task": "s"}, b={"task": "s"}, c={"param": "p"}, d={"task": "u"})
    assert task_sources(spec) == ("s", "u")
    assert task_sources(None) == ()
    assert collect([(2, "c"), (0, "a"), (1, "b")]) == ["a", "b", "c"]
    assert describe({"param": "n"}) == "param 'n'"
    assert describe({"literal": []}) == "a literal list"


def test_the_explainer_says_what_list_a_mapped_task_waits_for():
    from datetime import UTC, datetime

    from orchestrator.scheduling.explain import MAP_EXPANDING, MAP_WAITING, TaskFacts, explain_task

    now = datetime(2026, 1, 1, tzinfo=UTC)
    base = dict(now=now, dag_id="d", run_id="r", task_id="load", task_state="scheduled")
    waiting = explain_task(
        TaskFacts(
            **base,
            upstream=(("list_files", "running"), ("setup", "queued")),
            map_sources=("list_files",),
        )  # fmt: skip
    )
    assert [r.code for r in waiting][:2] == [MAP_WAITING, "upstream_waiting"]
    assert waiting[0].message.startswith("waiting for list_files to produce the list")
    assert "setup (queued)" in waiting[1].message and "list_files" not in waiting[1].message
    ready = explain_task(
        TaskFacts(**base, upstream=(("list_files", "success"),), map_sources=("list_files",))
    )
    assert ready[0].code == MAP_EXPANDING
    # an instance (no map_sources): the ordinary reasons
    plain = explain_task(TaskFacts(**base, upstream=(("list_files", "running"),)))
    assert [r.code for r in plain] == ["upstream_waiting", "no_live_worker"]


def test_a_mapped_instance_cannot_read_the_whole_list_it_is_mapped_over():
    import logging
    from datetime import UTC, datetime

    from orchestrator.authoring.context import TaskContext

    now = datetime(2026, 1, 1, tzinfo=UTC)
    ctx = TaskContext(
        dag_id="d", run_id="r", task_id="load", logical_date=now, data_interval_start=now,
        data_interval_end=now, try_number=1, params={}, idempotency_key="d/r/load/2",
        log=logging.getLogger("t"), upstream_ids=("list_files", "config"),
        _results={"config": '{"a": 1}'}, map_index=2, mapped_over=("list_files",),
    )  # fmt: skip
    assert ctx.upstream("config") == {"a": 1}
    with pytest.raises(KeyError, match="instance 2 gets its item as an argument"):
        ctx.upstream("list_files")
    assert ctx.template_vars("UTC")["map_index"] == 2


def test_collected_results_come_in_map_order_whatever_order_they_are_read_in():
    """Issue 31: ordered by map index, not by value."""
    assert collect([(2, "a"), (0, "c"), (1, "b")]) == ["c", "b", "a"]
    assert collect([(1, 0), (0, 9)]) == [9, 0]


def test_what_a_bad_value_is_is_said_with_a_preview_of_forty_characters():
    """Issue 31: a string is shown by its first 40 characters, a list by its length."""
    spec = _expand(path={"task": "ls"})
    text = "x" * 39 + "yz-and-more"
    with pytest.raises(MapError) as raised:
        map_items(spec, {"path": text}, limit=10, task_id="t")
    assert f"a string ({text[:40]!r})" in str(raised.value)
    kwargs = {"kind": "expand_kwargs", "args": [["*", {"task": "pairs"}]], "partial": {}}
    [bad] = map_items(kwargs, {"*": [[1, 2]]}, limit=10, task_id="t")
    assert isinstance(bad, BadItem) and "item 0 is a list of 2" in bad.error
