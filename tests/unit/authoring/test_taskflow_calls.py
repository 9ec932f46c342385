"""The TaskFlow call style (issue 25 item 1): calling a task inside a DAG builds the
graph and returns a reference (XComArg), never runs the function at parse time."""

from __future__ import annotations

import sys
import textwrap

import pytest

from orchestrator import DAG, task, task_group
from orchestrator.authoring.loader import DagImportError, load_file
from orchestrator.authoring.spec import DagSpec, serialize_dag, spec_hash
from orchestrator.authoring.taskflow import invoke, output_error
from orchestrator.authoring.xcom_arg import XComArg
from orchestrator.errors import DagDefinitionError


def _line() -> int:
    return sys._getframe(1).f_lineno


def _refused(exc: pytest.ExceptionInfo, line: int, text: str) -> None:
    assert exc.value.fileloc == __file__
    assert exc.value.lineno == line, str(exc.value)
    assert text in str(exc.value), str(exc.value)


def _ups(dag: DAG) -> dict[str, list[str]]:
    return {t: sorted(x.upstream_ids) for t, x in dag.tasks.items()}


def test_calling_tasks_builds_edges_and_returns_references_without_running():
    ran = []
    with DAG("etl") as dag:

        @task
        def extract():
            ran.append("extract")
            return {"rows": [1, 2]}

        @task
        def load(rows, *, mode="append"):
            ran.append("load")

        data = extract()
        out = load(data["rows"], mode="replace")
    assert ran == []
    assert isinstance(data, XComArg) and data.task is extract and data.keys == ()
    assert out.task is load
    assert _ups(dag) == {"extract": [], "load": ["extract"]}
    assert load.call_args[0].keys == ("rows",)
    assert load.call_kwargs == {"mode": "replace"}


def test_references_inside_lists_and_dicts_and_as_keyword_arguments_are_edges():
    with DAG("nested") as dag:

        @task
        def a():
            return 1

        @task
        def b():
            return 2

        @task
        def c():
            return 3

        @task
        def combine(items, named, *, extra):
            return None

        combine([a(), 5], {"x": {"y": b()}}, extra=c())
    assert _ups(dag)["combine"] == ["a", "b", "c"]


def test_the_same_task_called_twice_gets_ids_t_and_t__1():
    with DAG("twice") as dag:

        @task(retries=4)
        def t(x):
            return x

        first, second, third = t(1), t(2), t(3)
    assert [first.task_id, second.task_id, third.task_id] == ["t", "t__1", "t__2"]
    assert dag.tasks["t__1"].retries == 4  # a copy keeps the options
    assert dag.tasks["t__2"].call_args == (3,)


def test_a_task_called_only_inside_groups_is_made_there_and_the_template_dropped():
    with DAG("groups") as dag:

        @task
        def add(x):
            return x + 1

        @task_group
        def first(v):
            return add(v)

        @task_group
        def second(v):
            add(v)
            return add(v)

        second(first(1))
    dag.validate()
    assert sorted(dag.tasks) == ["first.add", "second.add", "second.add__1"]
    assert _ups(dag)["second.add"] == ["first.add"]


def test_reference_wiring_with_shift_operators():
    with DAG("wire") as dag:

        @task
        def a():
            return 1

        @task
        def b(ctx):
            return None

        @task
        def c(ctx):
            return None

        ref = a()
        ref >> b
        [ref] >> c
    assert _ups(dag) == {"a": [], "b": ["a"], "c": ["a"]}


def test_outside_any_dag_calling_a_task_calls_its_function():
    with DAG("plain"):

        @task
        def double(x):
            return 2 * x

    assert double(4) == 8
    assert double.function(5) == 10


def test_a_call_that_does_not_fit_the_signature_is_refused_at_file_and_line():
    with pytest.raises(DagDefinitionError) as exc, DAG("bad"):

        @task
        def load(rows):
            return rows

        line = _line() + 1
        load(1, 2)
    _refused(exc, line, "the call does not fit def load(rows)")
    with pytest.raises(DagDefinitionError) as exc, DAG("bad2"):

        @task
        def load2(rows, limit):
            return rows

        line = _line() + 1
        load2(1)
    _refused(exc, line, "load2() needs 'limit', which the call does not give")


def test_a_reference_to_a_task_of_another_dag_is_refused():
    with DAG("one"):

        @task
        def extract():
            return 1

        ref = extract()
    with pytest.raises(DagDefinitionError) as exc, DAG("two"):

        @task
        def load(x):
            return x

        line = _line() + 1
        load(ref)
    _refused(exc, line, "a result of DAG 'one'")
    with pytest.raises(DagDefinitionError) as exc, DAG("three"):
        line = _line() + 1
        extract()
    _refused(exc, line, "is called inside DAG 'three'")


MISUSES = {
    "f-string": (lambda ref: f"{ref}", "formatted into text"),
    "str": (lambda ref: str(ref), "turned into text"),
    "percent": (lambda ref: "%s" % ref, "turned into text"),  # noqa: UP031
    "bool": (lambda ref: bool(ref), "tested for truth"),
    "if": (lambda ref: 1 if ref else 0, "tested for truth"),
    "iteration": (lambda ref: [x for x in ref], "iterated"),  # noqa: C416
    "unpacking": (lambda ref: [*ref], "iterated"),
    "len": (lambda ref: len(ref), "measured"),
    "in": (lambda ref: "x" in ref, "searched"),
}


@pytest.mark.parametrize("case", sorted(MISUSES))
def test_a_reference_used_as_a_value_at_parse_time_is_an_error_naming_file_and_line(case):
    use, says = MISUSES[case]
    with pytest.raises(DagDefinitionError) as exc, DAG("misuse"):

        @task
        def extract():
            return "x"

        use(extract())
    assert exc.value.fileloc == __file__
    assert exc.value.lineno is not None
    assert says in str(exc.value)
    assert "extract() is a reference to a result" in str(exc.value)
    assert "pass it to a task as an argument" in str(exc.value)


def test_the_loader_never_runs_a_called_function_and_names_file_line_of_a_misuse(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "etl.py"
    path.write_text(
        textwrap.dedent(
            f"""
            from orchestrator import DAG, task

            with DAG("etl", schedule=None) as dag:
                @task
                def extract():
                    open({str(marker)!r}, "w").write("ran")
                    return [1]

                @task
                def load(rows):
                    open({str(marker)!r}, "w").write("ran")

                load(extract())
            """
        )
    )
    [dag] = load_file(str(path))
    assert not marker.exists()
    assert sorted(dag.tasks["load"].upstream_ids) == ["extract"]
    path.write_text(
        textwrap.dedent(
            """
            from orchestrator import DAG, task

            with DAG("etl", schedule=None) as dag:
                @task
                def extract():
                    return "2026"

                name = f"out-{extract()}.csv"
            """
        )
    )
    with pytest.raises(DagImportError) as exc:
        load_file(str(path))
    assert "etl.py:9:" in exc.value.message
    assert "formatted into text" in exc.value.message


def test_expand_and_partial_take_references_and_keys():
    with DAG("mapped") as dag:

        @task
        def listing():
            return {"files": ["a", "b"]}

        @task
        def base():
            return 10

        @task
        def add(x, y):
            return x + y

        @task
        def total(values):
            return sum(values)

        total(add.partial(y=base()).expand(x=listing()["files"]))
    spec = DagSpec.from_dict(serialize_dag(dag))
    assert spec.tasks["add"].mapping["args"] == [["x", {"task": "listing", "key": ["files"]}]]
    assert spec.tasks["add"].mapping["partial"] == {"y": {"__xcomarg__": "base", "key": []}}
    assert set(spec.tasks["add"].upstream) == {"listing", "base"}
    assert spec.tasks["total"].upstream == ("add",)
    assert add.ctx_first is False  # def add(x, y): no context


def test_a_changed_argument_makes_a_new_version():
    def build(limit: int) -> str:
        with DAG("v") as dag:

            @task
            def extract():
                return 1

            @task
            def load(x, limit):
                return x

            load(extract(), limit=limit)
        return spec_hash(serialize_dag(dag))

    assert build(5) != build(6)
    assert build(5) == build(5)


class _Ctx:
    def __init__(self, results):
        self.results = results
        self.params = {}

    def upstream(self, task_id):
        return self.results[task_id]


def test_invoke_resolves_references_keys_and_nested_values_at_run_time():
    with DAG("run"):

        @task
        def extract():
            return None

        @task
        def load(ctx, rows, *, meta):
            return (ctx, rows, meta)

        data = extract()
        load(data["rows"], meta={"all": [data], "n": data["n"]})
    ctx = _Ctx({"extract": {"rows": [1, 2], "n": 2}})
    got = invoke(load, ctx, None, lambda fn: True)
    assert got == (ctx, [1, 2], {"all": [{"rows": [1, 2], "n": 2}], "n": 2})
    ctx = _Ctx({"extract": {"rows": [1]}})
    with pytest.raises(KeyError) as exc:
        invoke(load, ctx, None, lambda fn: True)
    assert "task 'load': argument extract()['n']: 'extract' returned no key 'n'" in str(exc.value)


def test_multiple_outputs_from_the_option_or_a_dict_annotation_and_its_check():
    with DAG("mo"):

        @task(multiple_outputs=True)
        def a():
            return {}

        @task
        def b() -> dict[str, int]:
            return {}

        @task
        def c() -> list[int]:
            return []

        @task(multiple_outputs=False)
        def d() -> dict:
            return {}

    assert (a.multiple_outputs, b.multiple_outputs) == (True, True)
    assert (c.multiple_outputs, d.multiple_outputs) == (False, False)
    assert output_error(a, {"total": 1}) is None
    assert output_error(a, None) is None
    assert "task 'a' has multiple_outputs" in output_error(a, [1, 2])
    assert "returned list, not a dict" in output_error(a, [1, 2])
    assert "key 3 is int" in output_error(a, {3: "x"})
    assert output_error(c, [1]) is None


def test_a_task_reading_only_keys_gets_only_those_keys_sent():
    from types import SimpleNamespace

    from orchestrator.engine.mapped_job import mapped_job

    with DAG("keys") as dag:

        @task(multiple_outputs=True)
        def summarize():
            return {}

        @task
        def report(total, count):
            return total

        @task
        def whole(summary, total):
            return summary

        @task
        def with_ti(total, ti):
            return total

        s = summarize()
        report(s["total"], count=s["count"])
        whole(s, s["total"])
        with_ti(s["total"])
    spec = DagSpec.from_dict(serialize_dag(dag))
    assert spec.tasks["report"].result_keys == {"summarize": ["count", "total"]}
    assert spec.tasks["whole"].result_keys == {}  # the whole dict is an argument
    assert spec.tasks["with_ti"].result_keys == {}  # ti.xcom_pull could read it all
    full = '{"total": 6, "count": 3, "rows": [1, 2, 3]}'
    claim = SimpleNamespace(upstream_results={"summarize": full}, map_index=-1)
    job = mapped_job(spec, spec.tasks["report"], claim)
    assert job["results"]["summarize"] == '{"count": 3, "total": 6}'
    assert mapped_job(spec, spec.tasks["whole"], claim)["results"]["summarize"] == full
    claim = SimpleNamespace(upstream_results={"summarize": '{"total": 1}'}, map_index=-1)
    # a key missing: sent whole, so the try's error names the result's real keys
    assert mapped_job(spec, spec.tasks["report"], claim)["results"]["summarize"] == '{"total": 1}'


def test_calls_in_a_dag_file_without_a_with_block_build_the_graph_when_loaded(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "plain.py"
    path.write_text(
        textwrap.dedent(
            f"""
            from orchestrator import DAG

            dag = DAG("plain", schedule=None)

            @dag.task
            def extract():
                open({str(marker)!r}, "w").write("x")
                return [1, 2]

            @dag.task
            def load(rows):
                return sum(rows)

            load(extract())
            """
        )
    )
    [dag] = load_file(str(path))
    assert sorted(dag.tasks["load"].upstream_ids) == ["extract"]
    assert not marker.exists()
