"""Pure parts of issue 3: conf validation, branch results, overlap/max_active_runs rules."""

from __future__ import annotations

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.spec import DagSpec, serialize_dag, validate_conf
from orchestrator.errors import ConfigError, DagDefinitionError


def _spec(**dag_kw) -> DagSpec:
    with DAG("d", schedule=None, **dag_kw) as dag:

        @task.branch
        def pick():
            return "a"

        @task
        def a():
            return 1

        @task
        def b():
            return 2

        @task
        def c():
            return 3

        pick >> [a, b]
        b >> c
    return DagSpec.from_dict(serialize_dag(dag))


PARAMS = {"n": 1, "x": 1.5, "flag": False, "name": "a", "items": [], "opts": {}, "any": None}


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"n": "1"}, "param 'n' must be an integer (like its default 1), got a string \"1\""),
        ({"n": True}, "param 'n' must be an integer"),
        ({"flag": 0}, "param 'flag' must be a boolean"),
        ({"x": "big"}, "param 'x' must be a number"),
        ({"items": {}}, "param 'items' must be a list"),
    ],
)
def test_bad_conf_names_the_param(conf, message):
    with pytest.raises(ConfigError) as err:
        validate_conf(_spec(params=PARAMS), conf)
    assert message in str(err.value) and str(err.value).startswith("DAG 'd': ")


def test_strict_conf_refuses_an_undeclared_key_naming_the_declared_ones():
    with pytest.raises(ConfigError) as err:
        validate_conf(_spec(params=PARAMS, strict_conf=True), {"nope": 1})
    assert str(err.value) == (
        "DAG 'd': unknown param 'nope' (declared params: any, flag, items, n, name, opts, x); "
        "the DAG takes only its params (strict_conf=True)"
    )
    assert validate_conf(_spec(params=PARAMS), {"nope": 1}) == {**PARAMS, "nope": 1}


def test_strict_conf_is_stored_only_when_set_and_must_be_a_bool():
    assert "strict_conf" not in serialize_dag(_dag())  # version hashes of old DAGs kept
    assert serialize_dag(_dag(strict_conf=True))["strict_conf"] is True
    with pytest.raises(DagDefinitionError, match="strict_conf must be True or False"):
        _dag(strict_conf="yes")


def _dag(**kw) -> DAG:
    with DAG("s", schedule=None, **kw) as dag:

        @task
        def a():
            return 1

    return dag


def test_good_conf_is_merged_over_the_defaults():
    merged = validate_conf(_spec(params=PARAMS), {"x": 2, "any": [1], "n": 7})
    assert merged == {**PARAMS, "x": 2, "any": [1], "n": 7}
    with pytest.raises(ConfigError, match="conf must be a JSON object"):
        validate_conf(_spec(params=PARAMS), [1])


def test_branch_targets_accept_an_id_a_list_or_none():
    spec = _spec()
    assert spec.tasks["pick"].branch and not spec.tasks["a"].branch
    assert spec.branch_targets("pick", '"a"') == ("a",)
    assert spec.branch_targets("pick", '["b", "a", "b"]') == ("b", "a")
    assert spec.branch_targets("pick", None) == () == spec.branch_targets("pick", "[]")
    with pytest.raises(ValueError, match="returned 'c', not a direct downstream task"):
        spec.branch_targets("pick", '"c"')
    with pytest.raises(ValueError, match="must return a task id or a list of task ids"):
        spec.branch_targets("pick", "3")


def test_a_shell_task_cannot_be_a_branch():
    dag = DAG("s", schedule=None)
    with pytest.raises(DagDefinitionError, match="only a Python task can be a branch"):
        dag.shell("sh", "echo hi", branch=True)


@pytest.mark.parametrize("overlap", ["queue", "skip", "replace"])
def test_one_at_a_time_policies_refuse_a_larger_max_active_runs(overlap):
    with pytest.raises(DagDefinitionError, match="max_active_runs=3 needs overlap='allow'"):
        DAG("o", schedule=None, overlap=overlap, max_active_runs=3)
    assert DAG("o1", schedule=None, overlap=overlap).max_active_runs == 1


def test_defaults_allow_sixteen_runs():
    dag = DAG("dflt", schedule=None)
    assert (dag.overlap, dag.max_active_runs, dag.misfire) == ("allow", 16, "coalesce")
