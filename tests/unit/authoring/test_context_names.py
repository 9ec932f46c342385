"""The task context by parameter name (issue 25 item 2): which parameters get which
values, and the import error for a parameter nothing gives."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.context import AssetEvent, TaskContext
from orchestrator.authoring.context_names import CONTEXT_NAMES, context_values
from orchestrator.authoring.taskflow import invoke
from orchestrator.errors import DagDefinitionError


def _ctx(**over) -> TaskContext:
    when = datetime(2026, 1, 31, 2, tzinfo=UTC)
    fields = dict(
        dag_id="d",
        run_id="r1",
        task_id="t",
        logical_date=when,
        data_interval_start=when,
        data_interval_end=when,
        try_number=2,
        params={"n": 3},
        idempotency_key="d/r1/t",
        log=logging.getLogger("test"),
        upstream_ids=("extract",),
        _results={"extract": '{"rows": [1, 2], "total": 2}'},
        conf={"n": 3},
        outlets=("file:///out",),
    )
    fields.update(over)
    return TaskContext(**fields)


def _run(t, ctx=None):
    return invoke(t, ctx or _ctx(), None, lambda fn: True)


def test_parameters_named_after_context_values_get_them():
    with DAG("d") as dag:

        @task
        def report(ds, ti, dag_run, params, run_id, logical_date, task_instance):
            return (ds, ti.task_id, ti.try_number, dag_run.conf, dag_run.run_id, params,
                    run_id, logical_date.isoformat(), task_instance is ti)  # fmt: skip

    dag.validate()
    assert _run(report) == (
        "2026-01-31", "t", 2, {"n": 3}, "r1", {"n": 3}, "r1", "2026-01-31T02:00:00+00:00",
        True,
    )  # fmt: skip


def test_star_star_context_gets_every_name_and_ctx_first_stays():
    with DAG("d") as dag:

        @task
        def everything(**context):
            return sorted(context)

        @task
        def both(ctx, ds):
            return (ctx.run_id, ds)

        @task
        def plain(c):  # the ctx style: any first parameter gets the TaskContext
            return c.task_id

        @task
        def none():
            return "none"

    dag.validate()
    assert _run(everything) == sorted(CONTEXT_NAMES)
    assert _run(both) == ("r1", "2026-01-31")
    assert _run(plain) == "t"
    assert _run(none) == "none"


def test_called_and_mapped_tasks_mix_arguments_and_context_names():
    with DAG("d") as dag:

        @task
        def extract():
            return None

        @task
        def load(rows, ti, *, params):
            return (rows, ti.run_id, params)

        @task
        def b(x, ds):
            return (x, ds)

        load(extract()["rows"])
        b.expand(x=[1, 2])
    dag.validate()
    assert _run(load) == ([1, 2], "r1", {"n": 3})
    assert invoke(b, _ctx(), {"x": 7}, lambda fn: True) == (7, "2026-01-31")


def test_ti_xcom_pull_reads_upstream_results_and_keys():
    ctx = _ctx()
    ti = context_values(ctx)["ti"]
    assert ti.xcom_pull(task_ids="extract") == {"rows": [1, 2], "total": 2}
    assert ti.xcom_pull(task_ids="extract", key="total") == 2
    assert ti.xcom_pull(task_ids=["extract"]) == [{"rows": [1, 2], "total": 2}]
    with pytest.raises(LookupError, match="xcom_pull of 'other': no worker to ask here"):
        ti.xcom_pull(task_ids="other")


def test_pulls_beyond_upstream_and_pushes_ask_the_worker_and_upstream_reads_do_not():
    asked = []

    def ask(kind, request):
        asked.append((kind, json.loads(request)))
        if kind == "xcom_pull" and json.loads(request)["task_id"] == "late":
            return {"error": "task 'late' has not finished yet (state running)"}
        return {"found": json.dumps([1, 2]) if kind == "xcom_pull" else None}

    ctx = _ctx(ask=ask, max_result_bytes=20)
    ti = context_values(ctx)["ti"]
    assert ti.xcom_pull(task_ids="extract", key="total") == 2
    assert ctx.result("extract") == {"rows": [1, 2], "total": 2}
    assert asked == []  # upstream results are at hand: nothing asked
    assert ti.xcom_pull(task_ids="other", map_indexes=[0, 1]) == [1, 2]
    ti.xcom_push("k", {"a": 1})
    assert asked == [
        ("xcom_pull", {"task_id": "other", "key": "return_value", "map_indexes": [0, 1]}),
        ("xcom_push", {"key": "k", "value": '{"a": 1}'}),
    ]
    with pytest.raises(LookupError, match="task 'late' has not finished yet"):
        ti.xcom_pull(task_ids="late")
    with pytest.raises(ValueError, match="key 'big': the value is 22 bytes of JSON, over the 20"):
        ti.xcom_push("big", "x" * 20)
    with pytest.raises(TypeError, match="task 't': xcom_push key 'd': the value is not JSON"):
        ti.xcom_push("d", datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="a key other than 'return_value'"):
        ti.xcom_push("return_value", 1)
    assert len(asked) == 3


def test_outlet_events_and_triggering_asset_events_by_asset():
    when = datetime(2026, 1, 1, tzinfo=UTC)
    event = AssetEvent(id=1, uri="s3://in", at=when, extra={"n": 1})
    ctx = _ctx(triggering_asset_events=(event,))
    values = context_values(ctx)
    values["outlet_events"]["file:///out"].extra = {"rows": 5}
    values["outlet_events"]["file:///out"].extra["more"] = 1
    assert ctx.outlet_outcome() == {"outlet_events": {"file:///out": {"rows": 5, "more": 1}}}
    assert values["triggering_asset_events"]["s3://in"] == [event]
    with pytest.raises(ValueError, match="not one of its outlets"):
        values["outlet_events"]["file:///elsewhere"].extra = {"x": 1}


def test_a_parameter_that_is_neither_an_argument_nor_a_context_name_is_an_import_error():
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def load(ctx, rows):
            return rows

    assert exc.value.fileloc == __file__
    assert "task 'load': def load(ctx, rows): parameter 'rows' is neither an argument" in str(
        exc.value
    )
    assert "ds, ds_nodash" in str(exc.value)  # the context names are listed
    with pytest.raises(DagDefinitionError) as exc, DAG("bad_mapped"):

        @task
        def b(x, y):
            return x

        b.expand(x=[1])
    assert "needs 'y', which neither partial() nor expand() gives" in str(exc.value)


def test_a_mapped_def_b_x_is_mapped_without_a_context():
    with DAG("ok") as dag:

        @task
        def b(x):
            return x * 2

        b.expand(x=[1, 2])
    dag.validate()
    assert invoke(b, _ctx(), {"x": 4}, lambda fn: True) == 8


def test_callback_contexts_are_airflow_dicts_that_keep_ctx_attributes():
    from orchestrator.authoring.context_names import CallbackContext, alert_context

    ctx = _ctx()
    context = CallbackContext(ctx)
    assert context["ti"].task_id == "t" and context["ds"] == "2026-01-31"
    assert context.run_id == "r1" and context.params == {"n": 3}  # the ctx of before
    with pytest.raises(AttributeError):
        context.no_such_thing  # noqa: B018
    body = {"kind": "task_dead_lettered", "message": "ValueError: bad", "dag_id": "d",
            "run_id": "r1", "task_id": "t", "try_number": 3}  # fmt: skip
    got = alert_context(body)
    assert got["kind"] == "task_dead_lettered" and got["message"] == "ValueError: bad"
    assert (got["ti"].task_id, got["ti"].try_number, got["dag_run"].run_id) == ("t", 3, "r1")
    assert str(got["exception"]) == "ValueError: bad" and got["reason"] == "ValueError: bad"
