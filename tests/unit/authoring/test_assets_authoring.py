"""Assets in DAG files: validation naming file:line, outlets, schedules, specs (issue 15)."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta

import pytest

from orchestrator import DAG, Asset, AssetAll, AssetAny, AssetOrTimeSchedule, task
from orchestrator.authoring.spec import DagSpec, serialize_dag, spec_hash
from orchestrator.errors import DagDefinitionError

HERE = __file__


def test_a_non_uri_is_an_error_naming_this_file_and_line():
    with pytest.raises(DagDefinitionError) as exc:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        Asset("sales")
    assert (exc.value.fileloc, exc.value.lineno) == (HERE, line)
    assert "'sales' is not an asset URI" in str(exc.value)
    assert str(exc.value).startswith(f"{HERE}:{line}:")


def test_name_defaults_to_the_uri_and_equality_is_by_uri():
    a = Asset("s3://b/k")
    assert a.name == "s3://b/k" and a.group is None
    assert Asset("s3://b/k", name="k", group="g") == a
    assert hash(Asset("s3://b/k", name="k")) == hash(a)
    with pytest.raises(DagDefinitionError, match="name must be a non-empty string"):
        Asset("s3://b/k", name="")


def test_a_cron_string_in_an_asset_list_is_an_import_error():
    sales = Asset("s3://b/sales")
    with pytest.raises(DagDefinitionError) as exc:
        DAG("mixed", schedule=[sales, "0 5 * * *"])
    assert "use AssetOrTimeSchedule(timetable, assets)" in str(exc.value)
    assert exc.value.fileloc == HERE
    with pytest.raises(DagDefinitionError, match="empty list of assets"):
        DAG("empty", schedule=[])
    with pytest.raises(DagDefinitionError, match="is not an Asset"):
        DAG("odd", schedule=[sales, 3])
    with pytest.raises(DagDefinitionError, match="timetable must be"):
        AssetOrTimeSchedule([sales], [sales])


def test_outlets_must_be_assets():
    with DAG("d", schedule=None):
        with pytest.raises(DagDefinitionError, match="outlet 's3://x' is not an Asset"):
            task(task_id="a", outlets=["s3://x"])(lambda ctx: None)
        with pytest.raises(DagDefinitionError, match="outlets must be a list"):
            task(task_id="b", outlets="s3://x")(lambda ctx: None)


def test_schedules_are_stored_and_described():
    sales, costs = Asset("s3://b/sales", name="sales", group="fin"), Asset("s3://b/costs")
    with DAG("all", schedule=[sales, costs]) as d1:
        pass
    with DAG("any", schedule=sales | costs) as d2:
        pass
    with DAG("either", schedule=AssetOrTimeSchedule("@daily", sales & costs),
             start_date=datetime(2026, 1, 1)) as d3:  # fmt: skip
        pass
    specs = [DagSpec.from_dict(serialize_dag(d)) for d in (d1, d2, d3)]
    assert specs[0].asset_condition == AssetAll(sales, costs)
    assert specs[1].asset_condition == AssetAny(sales, costs)
    assert specs[0].schedule.kind == "none"
    assert specs[0].schedule_description() == "assets: s3://b/sales & s3://b/costs"
    assert specs[2].schedule.kind == "cron"
    assert specs[2].schedule_description().startswith("cron 0 0 * * * (UTC) or assets:")
    assert {a["uri"]: a for a in specs[0].assets}["s3://b/sales"] == {
        "uri": "s3://b/sales", "name": "sales", "group": "fin",
    }  # fmt: skip


def test_outlets_are_stored_per_task_and_a_dag_without_assets_keeps_its_hash():
    with DAG("plain", schedule=None) as plain:

        @task
        def t(ctx):
            pass

    data = serialize_dag(plain)
    assert "assets" not in data and "asset_schedule" not in data
    assert "outlets" not in data["tasks"][0]
    before = spec_hash(data)
    assert spec_hash(serialize_dag(plain)) == before

    sales = Asset("s3://b/sales")
    with DAG("prod", schedule=None) as prod:

        @task(outlets=[sales, sales])
        def load(ctx):
            pass

        prod.shell("sh", "true", outlets=[sales])
        prod.http("h", "http://127.0.0.1:9/x", outlets=[sales], timeout=timedelta(seconds=1))

    spec = DagSpec.from_dict(serialize_dag(prod))
    assert {t.task_id: t.outlets for t in spec.tasks.values()} == {
        "load": ("s3://b/sales",), "sh": ("s3://b/sales",), "h": ("s3://b/sales",),
    }  # fmt: skip


def test_outlet_event_adds_extra_only_for_an_outlet():
    import logging

    from orchestrator.authoring.context import TaskContext

    now = datetime(2026, 1, 1)
    ctx = TaskContext("d", "r", "t", now, now, now, 1, {}, "k", logging.getLogger("x"),
                      outlets=("s3://b/sales",))  # fmt: skip
    ctx.outlet_event(Asset("s3://b/sales"), extra={"rows": 1})
    ctx.outlet_event("s3://b/sales", extra={"more": True})
    assert ctx.outlet_outcome() == {"outlet_events": {"s3://b/sales": {"rows": 1, "more": True}}}
    with pytest.raises(ValueError, match="not one of its outlets"):
        ctx.outlet_event(Asset("s3://b/other"))
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        ctx.outlet_event("s3://b/sales", extra={"x": object()})
    with pytest.raises(ValueError, match="bytes of JSON, over 65536"):
        ctx.outlet_event("s3://b/sales", extra={"x": "y" * 70_000})
    assert ctx.outlet_outcome() == {"outlet_events": {"s3://b/sales": {"rows": 1, "more": True}}}
