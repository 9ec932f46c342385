"""The pure expansion rules of runtime task mapping (scheduling/mapping.py)."""

from __future__ import annotations

import pytest

from orchestrator.scheduling.mapping import (
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
    with pytest.raises(MapError, match="item 1 is a number"):
        map_items(spec, {"*": [{"x": 1}, 5]}, limit=5, task_id="t")
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
