"""Airflow's ``BashOperator`` over our shell task (``dag.shell``)::

    from orchestrator.airflow import BashOperator

    stamp = BashOperator(task_id="stamp", bash_command="date -u +%F -d {{ ds }}",
                         env={"DAY": "{{ ds }}"}, append_env=True, cwd="/tmp")

``bash_command`` and ``env`` values are templates (their values reach the command in
its environment, never spliced into the script); a command naming a ``.sh`` / ``.bash``
file is read from the DAG's ``template_searchpath``. Its last line of output is its
result (``.output``), exit status 99 (``skip_on_exit_code``) skips it. The command runs
with ``bash -c``, as in Airflow, in the DAG file's folder unless ``cwd=`` says
otherwise; ``env`` adds to the task's environment (with or without ``append_env``:
the task's environment is an allow-list already, see docs/porting.md).
``BashOperator.partial(task_id=...).expand(bash_command=[...])`` maps over commands.
"""

from __future__ import annotations

from typing import Any

from orchestrator.airflow.operators import BaseOperator
from orchestrator.authoring.task_node import Task
from orchestrator.authoring.where import caller, definition_error

__all__ = ["BashOperator"]

# a mapped bash_command: the item is the script, run by eval from the environment
MAPPED_COMMAND = 'eval "{{ bash_command }}"'
MAPPABLE = frozenset({"bash_command"})  # what .partial(...).expand(...) maps here


class BashOperator(BaseOperator):
    """Airflow's ``BashOperator(bash_command=..., env=..., append_env=..., cwd=...,
    skip_on_exit_code=99)``.

    >>> BashOperator(task_id="hi", bash_command="echo hi")     # doctest: +SKIP
    """

    template_fields = ("bash_command", "env", "cwd")
    own_args = frozenset(
        {"bash_command", "env", "append_env", "cwd", "skip_on_exit_code", "output_encoding",
         "output_processor"}
    )  # fmt: skip

    def __init__(
        self,
        *,
        bash_command: Any = None,
        env: dict[str, str] | None = None,
        append_env: bool = False,
        cwd: str | None = None,
        skip_on_exit_code: int | list[int] | None = 99,
        output_encoding: str = "utf-8",
        output_processor: Any = None,
        **kwargs: Any,
    ) -> None:
        where = caller()
        task_id = kwargs.get("task_id")
        if output_processor is not None:
            raise definition_error(
                f"BashOperator {task_id!r}: output_processor= is not supported here: "
                "post-process the result in the task downstream",
                where,
            )
        if output_encoding.lower().replace("-", "") != "utf8":
            raise definition_error(
                f"BashOperator {task_id!r}: output_encoding={output_encoding!r} is not "
                "supported here: output is read as UTF-8",
                where,
            )
        if not isinstance(append_env, bool):
            raise definition_error(f"BashOperator {task_id!r}: append_env must be True or False")
        if isinstance(skip_on_exit_code, list | tuple):
            if len(skip_on_exit_code) > 1:
                raise definition_error(
                    f"BashOperator {task_id!r}: skip_on_exit_code={list(skip_on_exit_code)} is "
                    "not supported here: one exit status skips (exit with it from the script)",
                    where,
                )
            skip_on_exit_code = skip_on_exit_code[0] if skip_on_exit_code else None
        self.bash_command = bash_command
        self.env = env
        self.append_env = append_env
        self.cwd = cwd
        self.skip_on_exit_code = skip_on_exit_code
        super().__init__(**kwargs)

    def _declare(self, dag: Any, task_id: str, options: dict[str, Any], where: Any) -> Task:
        command = self.bash_command
        if set(self._mapped) - MAPPABLE:
            raise definition_error(
                f"BashOperator {task_id!r}: only bash_command can be mapped here, not "
                f"{', '.join(n for n in self._mapped if n not in MAPPABLE)}",
                where,
            )
        if "bash_command" in self._mapped:
            command = MAPPED_COMMAND
        if not isinstance(command, str) or not command.strip():
            raise definition_error(
                f"BashOperator {task_id!r}: bash_command= must be a non-empty string, got "
                f"{command!r}",
                where,
            )
        return Task(
            dag,
            task_id,
            command=command,
            env=self.env,
            cwd=self.cwd,
            skip_on_exit_code=self.skip_on_exit_code,
            output_last_line=self.do_xcom_push,
            bash=True,
            where=where,
            **options,
        )
