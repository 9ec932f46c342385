"""Airflow's ``PythonVirtualenvOperator`` and ``ExternalPythonOperator`` over our
``@task.virtualenv`` / ``@task.external_python`` (a function run by another
interpreter)::

    from orchestrator.airflow import ExternalPythonOperator, PythonVirtualenvOperator

    pretty = PythonVirtualenvOperator(task_id="pretty", python_callable=tabulate_rows,
                                      requirements=["tabulate==0.9.0"], op_args=[rows.output])
    other = ExternalPythonOperator(task_id="other", python="/opt/venvs/x/bin/python",
                                   python_callable=add, op_kwargs={"a": 1, "b": 2})

The callable must be a module-level function (its source is sent to the other
interpreter); ``op_args`` / ``op_kwargs`` (upstream ``.output`` references included)
go over as JSON, and there the function gets only them (no context names).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from orchestrator.airflow.operators import BaseOperator
from orchestrator.authoring.python_env import python_env_options
from orchestrator.authoring.task_node import Task
from orchestrator.authoring.taskflow import bind
from orchestrator.authoring.where import caller, definition_error

__all__ = ["ExternalPythonOperator", "PythonVirtualenvOperator"]

REFUSED = {
    "pip_install_options": "give installer options in pip's (or uv's) configuration",
    "index_urls": "give the index in pip's (or uv's) configuration",
    "venv_cache_path": "virtualenvs are cached per requirements set (venv_cache_dir)",
    "use_dill": "arguments and results travel as JSON",
    "serializer": "arguments and results travel as JSON",
    "string_args": "pass op_args / op_kwargs",
    "templates_dict": "render the values upstream and pass them in op_kwargs",
    "expect_airflow": "the function runs without orchestrator.airflow",
    "expect_pendulum": "put pendulum in requirements",
    "skip_on_exit_code": "raise an exception to fail, or return early",
}


class _OtherInterpreter(BaseOperator):
    kind = "virtualenv"
    own_args = frozenset({"python_callable", "op_args", "op_kwargs", *REFUSED})

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any],
        op_args: Sequence[Any] | None = None,
        op_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        where = caller()
        for name, why in REFUSED.items():
            if kwargs.pop(name, None) not in (None, False):
                raise definition_error(
                    f"{type(self).__name__} {kwargs.get('task_id')!r}: {name}= is not "
                    f"supported here: {why}",
                    where,
                )
        if not callable(python_callable):
            raise definition_error(
                f"{type(self).__name__} {kwargs.get('task_id')!r}: python_callable= must be "
                "a module-level function",
                where,
            )
        self.python_callable = python_callable
        self.op_args, self.op_kwargs = list(op_args or ()), dict(op_kwargs or {})
        self.env = self._env(where)
        super().__init__(**kwargs)

    def _env(self, where: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _declare(self, dag: Any, task_id: str, options: dict[str, Any], where: Any) -> Task:
        made = Task(dag, task_id, fn=self.python_callable, python_env=self.env, where=where,
                    **options)  # fmt: skip
        bind(made, tuple(self.op_args), self.op_kwargs, where)  # references are edges
        return made


class PythonVirtualenvOperator(_OtherInterpreter):
    """Airflow's ``PythonVirtualenvOperator(python_callable=..., requirements=[...],
    python_version=..., system_site_packages=True, op_args=..., op_kwargs=...)``: a
    virtualenv built once per requirements set.

    >>> PythonVirtualenvOperator(task_id="v", python_callable=f, requirements=[])  # doctest: +SKIP
    """

    own_args = _OtherInterpreter.own_args | {"requirements", "python_version",
                                             "system_site_packages"}  # fmt: skip

    def __init__(
        self,
        *,
        requirements: Sequence[str] | str | None = None,
        python_version: str | None = None,
        system_site_packages: bool = True,
        **kwargs: Any,
    ) -> None:
        self.requirements, self.system_site_packages = requirements, system_site_packages
        self.python = f"python{python_version}" if python_version else None
        super().__init__(**kwargs)

    def _env(self, where: Any) -> dict[str, Any]:
        return python_env_options(
            "virtualenv", self.requirements, self.python, bool(self.system_site_packages), where
        )


class ExternalPythonOperator(_OtherInterpreter):
    """Airflow's ``ExternalPythonOperator(python="/path/bin/python", python_callable=...,
    op_args=..., op_kwargs=...)``: an interpreter that exists already.

    >>> ExternalPythonOperator(task_id="x", python=sys.executable, python_callable=f)  # doctest: +SKIP
    """

    own_args = _OtherInterpreter.own_args | {"python"}

    def __init__(self, *, python: str, **kwargs: Any) -> None:
        self.python = python
        super().__init__(**kwargs)

    def _env(self, where: Any) -> dict[str, Any]:
        return python_env_options("external_python", None, self.python, False, where)
