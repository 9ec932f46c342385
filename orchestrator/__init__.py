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
# issue 15: sensors (``@task.sensor`` is on ``task``; built-ins in orchestrator.sensors)
__all__ += ["PokeReturnValue"]


def __getattr__(name: str) -> Any:  # imported lazily so store-only processes stay light
    if name in ("DAG", "Task", "task", "PokeReturnValue"):
        from orchestrator.authoring import dag

        return getattr(dag, name)
    if name == "OrchestratorError":
        from orchestrator.errors import OrchestratorError

        return OrchestratorError
    raise AttributeError(name)
