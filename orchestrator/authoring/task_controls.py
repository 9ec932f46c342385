"""Task controls: what a task may say about its own outcome, and the options that
decide when it may run (issue 14).

A Python task raises :class:`Skip` to be marked skipped (downstream tasks follow
their trigger rules) or :class:`Fail` to fail at once, whatever retries it has left
(Airflow's ``AirflowSkipException`` / ``AirflowFailException``)::

    from orchestrator import DAG, Fail, Skip, task

    @task(retries=3)
    def load(ctx):
        if not ctx.params.get("files"):
            raise Skip("nothing to load today")
        if ctx.params.get("schema") == "v1":
            raise Fail("schema v1 is no longer supported: retrying will not help")

A shell task that exits with its ``skip_on_exit_code`` (99 unless set; None turns it
off) is skipped, like Airflow's BashOperator. The options checked here:
``priority_weight``, ``depends_on_past``, ``max_active_tis_per_dag``,
``skip_on_exit_code`` on a task; ``max_active_tasks`` and ``dagrun_timeout`` on a DAG.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from orchestrator.errors import DagDefinitionError, Fail, Skip

__all__ = ["Fail", "Skip", "dag_options", "is_gated", "task_options"]

SKIP_EXIT_CODE = 99  # a shell task's default skip_on_exit_code (Airflow's)
# issue 26: what runs a shell task's command (by its bash= option): bash from PATH for
# BashOperator, as Airflow runs it
SHELLS = {False: "/bin/sh", True: "bash"}
PRIORITY_MAX = 2**31 - 1  # priority_weight is stored in an INTEGER column


def _int(
    owner: str, name: str, value: Any, lowest: int, where: tuple[str | None, int | None]
) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lowest <= value <= PRIORITY_MAX:
        raise DagDefinitionError(
            f"{owner}: {name} must be an integer from {lowest} to {PRIORITY_MAX}, got {value!r}",
            fileloc=where[0],
            lineno=where[1],
        )
    return value


def task_options(
    task_id: str,
    *,
    priority_weight: Any,
    depends_on_past: Any,
    max_active_tis_per_dag: Any,
    skip_on_exit_code: Any,
    where: tuple[str | None, int | None],
) -> dict[str, Any]:
    """The task's control options, checked; errors name the task, file and line."""
    owner = f"task {task_id!r}"
    if not isinstance(depends_on_past, bool):
        raise DagDefinitionError(
            f"{owner}: depends_on_past must be True or False, got {depends_on_past!r}",
            fileloc=where[0],
            lineno=where[1],
        )
    out: dict[str, Any] = {
        "priority_weight": _int(owner, "priority_weight", priority_weight, -PRIORITY_MAX, where),
        "depends_on_past": depends_on_past,
        "max_active_tis_per_dag": None,
        "skip_on_exit_code": None,
    }
    if max_active_tis_per_dag is not None:
        out["max_active_tis_per_dag"] = _int(
            owner, "max_active_tis_per_dag", max_active_tis_per_dag, 1, where
        )
    if skip_on_exit_code is not None:
        code = _int(owner, "skip_on_exit_code", skip_on_exit_code, 1, where)
        if code > 255:
            raise DagDefinitionError(
                f"{owner}: skip_on_exit_code must be an exit status from 1 to 255, got {code}",
                fileloc=where[0],
                lineno=where[1],
            )
        out["skip_on_exit_code"] = code
    return out


def dag_options(
    dag_id: str,
    *,
    max_active_tasks: Any,
    dagrun_timeout: Any,
    where: tuple[str | None, int | None],
) -> dict[str, Any]:
    """The DAG's control options, checked; errors name the DAG, file and line."""
    owner = f"DAG {dag_id!r}"
    out: dict[str, Any] = {"max_active_tasks": None, "dagrun_timeout": None}
    if max_active_tasks is not None:
        out["max_active_tasks"] = _int(owner, "max_active_tasks", max_active_tasks, 1, where)
    if dagrun_timeout is not None:
        value = dagrun_timeout
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = timedelta(seconds=value)
        if not isinstance(value, timedelta) or value <= timedelta(0):
            raise DagDefinitionError(
                f"{owner}: dagrun_timeout must be a positive timedelta or number of seconds, "
                f"got {dagrun_timeout!r}",
                fileloc=where[0],
                lineno=where[1],
            )
        out["dagrun_timeout"] = value
    return out


def is_gated(task: Any, dag_max_active_tasks: int | None) -> bool:
    """Whether claiming an instance of ``task`` (a Task or TaskSpec) needs the checks
    of store/tasks/concurrency.py (depends_on_past, max_active_tasks, max_active_tis_per_dag)."""
    return bool(
        getattr(task, "depends_on_past", False)
        or getattr(task, "max_active_tis_per_dag", None)
        or dag_max_active_tasks
    )


_OS_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")


def run_as_user_option(owner: str, value: Any, where: Any) -> str | None:
    """``run_as_user=`` (issue 24): an OS user name or uid, checked for its shape here;
    the worker resolves it (a task user it cannot become fails the try, named)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _OS_USER.fullmatch(value):
        raise DagDefinitionError(
            f"task {owner!r}: run_as_user must be an OS user name or uid, got {value!r}",
            fileloc=where[0],
            lineno=where[1],
        )
    return value
