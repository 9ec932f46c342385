"""orchestrator: a DAG workflow orchestrator and distributed job scheduler.

Users write DAG files with :class:`DAG` and :func:`task`::

    from datetime import datetime
    from orchestrator import DAG, task

    with DAG("hello", schedule="@daily", start_date=datetime(2026, 1, 1),
             timezone="UTC") as dag:
        @task
        def say(ctx):
            ctx.log.info("hello for %s", ctx.logical_date)
"""

from typing import Any

__all__ = ["DAG", "Task", "task", "OrchestratorError"]
__all__ += ["Connection"]  # issue 16: what ctx.connection() returns and backends may
# issue 15: assets and asset schedules
_ASSET_NAMES = ("Asset", "AssetAll", "AssetAny", "AssetOrTimeSchedule")  # via authoring.dag
__all__ += list(_ASSET_NAMES)
# issue 14: task groups and task controls
__all__ += ["TaskGroup", "task_group", "Skip", "Fail"]
__all__ += ["Client", "ClientError"]  # issue 17: the API client
# issue 15: sensors (``@task.sensor`` is on ``task``; built-ins in orchestrator.sensors)
__all__ += ["PokeReturnValue"]
__all__ += ["setup", "teardown"]  # issue 25: setup and teardown tasks
__all__ += ["Param"]  # issue 25: typed params (JSON Schema)
__all__ += ["dag"]  # issue 25: Airflow's @dag decorator
__all__ += ["BaseTrigger", "TriggerEvent", "TaskDeferred"]  # issue 30: deferrable tasks


def __getattr__(name: str) -> Any:  # imported lazily so store-only processes stay light
    if name in (
        "DAG", "Task", "task", "PokeReturnValue", "setup", "teardown", "Param", "dag",
        *_ASSET_NAMES,
    ):  # fmt: skip
        from orchestrator.authoring import dag

        return getattr(dag, name)
    if name == "Connection":  # issue 16
        from orchestrator.authoring.credentials import Connection

        return Connection
    if name in ("TaskGroup", "task_group"):  # issue 14: task groups
        from orchestrator.authoring import task_group

        return getattr(task_group, name)
    if name in ("Skip", "Fail"):  # issue 14: task controls
        from orchestrator import errors

        return getattr(errors, name)
    if name in ("BaseTrigger", "TriggerEvent", "TaskDeferred"):  # issue 30
        from orchestrator.authoring import triggers

        return getattr(triggers, name)
    if name == "OrchestratorError":
        from orchestrator.errors import OrchestratorError

        return OrchestratorError
    if name in ("Client", "ClientError"):  # issue 17: the API client
        from orchestrator import client

        return getattr(client, name)
    raise AttributeError(name)
