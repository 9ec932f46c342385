"""The pure checks of issue 24 item 1: who may run tasks as whom, run_as_user's shape."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from orchestrator import DAG
from orchestrator.authoring.spec import DagSpec, serialize_dag
from orchestrator.engine.task_user import check_task_user, resolve
from orchestrator.errors import ConfigError, DagDefinitionError

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is for root")


def settings(task_user=None, allow=False):
    return SimpleNamespace(task_user=task_user, allow_root_tasks=allow)


@root_only
def test_root_without_a_task_user_is_refused_unless_allowed() -> None:
    with pytest.raises(ConfigError, match="runs as root and task_user is not set"):
        check_task_user(settings())
    assert check_task_user(settings(allow=True)) is None


@root_only
def test_a_task_user_that_is_root_is_refused_unless_allowed() -> None:
    with pytest.raises(ConfigError, match="'root' is root"):
        check_task_user(settings("root"))
    assert check_task_user(settings("0", allow=True)).uid == 0


def test_an_unknown_task_user_is_named() -> None:
    with pytest.raises(ConfigError, match="task_user 'no-such-user-x': no such OS user"):
        resolve("no-such-user-x")
    assert resolve(None) is None and resolve("") is None
    assert resolve("0").name == "root"


def test_run_as_user_is_stored_in_the_spec_and_checked() -> None:
    with DAG("d", schedule=None) as dag:
        dag.shell("a", "true", run_as_user="etl")
        dag.shell("b", "true")
    spec = DagSpec.from_dict(serialize_dag(dag))
    assert spec.tasks["a"].run_as_user == "etl"
    assert spec.tasks["b"].run_as_user is None
    other = DAG("e", schedule=None)
    with pytest.raises(DagDefinitionError, match="run_as_user must be an OS user name"):
        other.shell("a", "true", run_as_user="etl; rm -rf /")
