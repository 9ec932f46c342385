"""``max_lost_tries``: a DAG and task option, validated, serialized only when set."""

from __future__ import annotations

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.spec import DagSpec, serialize_dag, spec_hash
from orchestrator.errors import DagDefinitionError
from orchestrator.settings import Settings


def _dag(**dag_options):
    with DAG("lossy", schedule=None, **dag_options) as dag:

        @task
        def inherits(ctx):
            return 1

        @task(max_lost_tries=4)
        def own(ctx):
            return 2

        @task(max_lost_tries=0)
        def strict(ctx):
            return 3

    return dag


def test_a_task_takes_its_own_bound_else_the_dags_else_none():
    dag = _dag(max_lost_tries=1)
    assert {t.task_id: t.max_lost_tries for t in dag.tasks.values()} == {
        "inherits": 1,
        "own": 4,
        "strict": 0,
    }
    assert _dag().tasks["inherits"].max_lost_tries is None  # the setting decides


def test_the_bound_survives_serialization():
    spec = DagSpec.from_dict(serialize_dag(_dag(max_lost_tries=1)))
    assert {t: s.max_lost_tries for t, s in spec.tasks.items()} == {
        "inherits": 1,
        "own": 4,
        "strict": 0,
    }
    unset = DagSpec.from_dict(serialize_dag(_dag()))
    assert unset.tasks["inherits"].max_lost_tries is None


def test_a_dag_that_does_not_use_it_keeps_its_version_hash():
    def plain():
        with DAG("plain", schedule=None) as dag:
            task(task_id="a")(lambda ctx: None)
        return serialize_dag(dag)

    data = plain()
    assert "max_lost_tries" not in data["tasks"][0]
    assert spec_hash(data) == spec_hash(plain())


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_a_bad_bound_is_an_error_naming_the_task(bad):
    match = "task 'x': max_lost_tries must be an integer"
    with pytest.raises(DagDefinitionError, match=match), DAG("bad", schedule=None):
        task(task_id="x", max_lost_tries=bad)(lambda ctx: None)
    with pytest.raises(DagDefinitionError, match="DAG 'bad': max_lost_tries must be an integer"):
        DAG("bad", schedule=None, max_lost_tries=bad)


def test_the_setting_defaults_to_2_and_reads_its_variable():
    assert Settings.load({}).max_lost_tries == 2
    assert Settings.load({"ORCHESTRATOR_MAX_LOST_TRIES": "5"}).max_lost_tries == 5
