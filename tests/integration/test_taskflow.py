"""The TaskFlow call style on both backends (issue 25 item 1): results flow through
references, multiple_outputs, mapping over references, and the parse never runs a
task's function."""

from __future__ import annotations

import json

from orchestrator.states import TaskState
from tests.helpers import Harness

ETL = """
import os
from orchestrator import DAG, task

MARK = os.path.join(os.path.dirname(__file__), "ran-{name}")

def mark(name):
    open(MARK.format(name=name), "a").write("x")

with DAG("etl", schedule=None) as dag:
    @task
    def extract():
        mark("extract")
        return {"rows": [1, 2, 3], "source": "db"}

    @task(multiple_outputs=True)
    def summarize(rows):
        mark("summarize")
        return {"total": sum(rows), "count": len(rows)}

    @task
    def load(total, count, *, tags, source):
        mark("load")
        return {"total": total, "count": count, "tags": tags, "source": source}

    @task
    def audit(ctx, everything):
        return {"everything": everything, "task": ctx.task_id}

    data = extract()
    summary = summarize(data["rows"])
    load(summary["total"], summary["count"], tags=["a", {"s": data["source"]}], source=data)
    audit(summary)
    audit(data)
"""


def _results(store, run_id: str, *task_ids: str) -> dict:
    raw = store.results(run_id, list(task_ids))
    return {t: json.loads(v) for t, v in raw.items()}


def test_results_flow_through_references_and_the_parse_runs_nothing(
    harness: Harness, write_dag, dags_dir
):
    write_dag("etl.py", ETL)
    assert harness.parse().dags == 1
    assert harness.store.import_errors() == []
    assert sorted(p.name for p in dags_dir.iterdir() if p.name.startswith("ran-")) == []
    run = harness.store.trigger_run("etl", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    got = _results(harness.store, run.run_id, "summarize", "load", "audit", "audit__1")
    assert got["summarize"] == {"total": 6, "count": 3}
    assert got["load"] == {
        "total": 6,
        "count": 3,
        "tags": ["a", {"s": "db"}],
        "source": {"rows": [1, 2, 3], "source": "db"},
    }
    assert got["audit"] == {"everything": {"total": 6, "count": 3}, "task": "audit"}
    assert got["audit__1"]["everything"]["source"] == "db"
    # each function ran once, in its try, never at parse time
    for name in ("extract", "summarize", "load"):
        assert (dags_dir / f"ran-{name}").read_text() == "x"


BAD_OUTPUTS = """
from orchestrator import DAG, task

with DAG("bad_outputs", schedule=None) as dag:
    @task(multiple_outputs=True)
    def summarize():
        return [1, 2]

    @task
    def typed() -> dict[str, int]:
        return {"n": 1}

    @task
    def report(total):
        return total

    @task
    def needs(missing):
        return missing

    report(summarize()["total"])
    needs(typed()["nope"])
"""


def test_multiple_outputs_with_a_non_dict_and_a_missing_key_fail_naming_task_and_key(
    harness: Harness, write_dag
):
    write_dag("bad_outputs.py", BAD_OUTPUTS)
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("bad_outputs", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "failed"
    by_id = {t.task_id: t for t in harness.store.task_instances(run.run_id)}
    assert by_id["summarize"].state == TaskState.FAILED
    assert "task 'summarize' has multiple_outputs" in by_id["summarize"].error
    assert "returned list, not a dict" in by_id["summarize"].error
    assert by_id["report"].state == TaskState.UPSTREAM_FAILED
    assert by_id["typed"].state == TaskState.SUCCESS
    assert by_id["needs"].state == TaskState.FAILED
    assert "task 'needs': argument typed()['nope']: 'typed' returned no key 'nope'" in (
        by_id["needs"].error
    )


MAPPED = """
from orchestrator import DAG, task

with DAG("mapped_flow", schedule=None) as dag:
    @task
    def listing():
        return {"files": ["a", "bb", "ccc"]}

    @task
    def base():
        return 100

    @task
    def size(path, offset):
        return len(path) + offset

    @task
    def total(sizes):
        return sum(sizes)

    total(size.partial(offset=base()).expand(path=listing()["files"]))
"""


def test_mapping_over_a_reference_key_with_a_partial_reference(harness: Harness, write_dag):
    write_dag("mapped_flow.py", MAPPED)
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("mapped_flow", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    assert _results(harness.store, run.run_id, "size", "total") == {
        "size": [101, 102, 103],
        "total": 306,
    }


MISUSE = """
from orchestrator import DAG, task

with DAG("misuse", schedule=None) as dag:
    @task
    def extract():
        return "2026"

    path = f"/data/{extract()}.csv"
"""


def test_a_reference_in_an_f_string_is_an_import_error_naming_file_and_line(
    harness: Harness, write_dag
):
    write_dag("misuse.py", MISUSE)
    assert harness.parse().errors == 1
    [error] = harness.store.import_errors()
    assert "misuse.py:9:" in error.message
    assert "extract() is a reference to a result" in error.message
    assert "pass it to a task as an argument" in error.message


CONTEXT = """
from orchestrator import DAG, task

with DAG("by_name", schedule=None, params={"n": 1}) as dag:
    @task
    def report(ds, ti, dag_run, params, run_id, **context):
        return {
            "ds": ds,
            "ti": [ti.task_id, ti.try_number, ti.map_index],
            "conf": dag_run.conf,
            "params": params,
            "same_run": run_id == dag_run.run_id == ti.run_id,
            "context_has": sorted(k for k in ("ds_nodash", "logical_date", "macros") if k in context),
        }

    @task
    def pull(ti):
        return ti.xcom_pull(task_ids="report", key="params")

    @task
    def b(x, ti):
        return [x, ti.map_index]

    report >> pull
    b.expand(x=[10, 20])
"""


def test_the_context_by_parameter_name_in_a_try(harness: Harness, write_dag):
    write_dag("by_name.py", CONTEXT)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("by_name", harness.clock.now(), conf={"n": 5})
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    got = _results(harness.store, run.run_id, "report", "pull", "b")
    assert got["report"] == {
        "ds": harness.clock.now().strftime("%Y-%m-%d"),
        "ti": ["report", 1, -1],
        "conf": {"n": 5},
        "params": {"n": 5},
        "same_run": True,
        "context_has": ["ds_nodash", "logical_date", "macros"],
    }
    assert got["pull"] == {"n": 5}
    assert got["b"] == [[10, 0], [20, 1]]


def test_a_parameter_nothing_gives_is_an_import_error_naming_file_line(harness: Harness, write_dag):
    write_dag(
        "unknown_param.py",
        """
        from orchestrator import DAG, task

        with DAG("unknown_param", schedule=None) as dag:
            @task
            def load(ctx, rows):
                return rows
        """,
    )
    assert harness.parse().errors == 1
    [error] = harness.store.import_errors()
    assert "unknown_param.py:5: task 'load': def load(ctx, rows): parameter 'rows'" in (
        error.message
    )
    assert "a context name" in error.message


KWARGS = """
from orchestrator import DAG, task

with DAG("kwargs_flow", schedule=None) as dag:
    @task
    def pairs():
        return [{"a": 1, "b": 2}, {"a": 10, "b": 20}]

    @task
    def add(a, b):
        return a + b

    @task
    def total(sums):
        return sum(sums)

    total(add.expand_kwargs(pairs()))
"""


def test_expand_kwargs_over_a_reference_without_a_context(harness: Harness, write_dag):
    write_dag("kwargs_flow.py", KWARGS)
    assert harness.parse().dags == 1, harness.store.import_errors()
    run = harness.store.trigger_run("kwargs_flow", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "success"
    assert _results(harness.store, run.run_id, "add", "total") == {"add": [3, 30], "total": 33}
