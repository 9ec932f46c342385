"""Airflow's classic operators over our tasks: :class:`BaseOperator` (and custom
operators subclassing it, with ``execute(self, context)`` and ``template_fields``),
``PythonOperator``, ``BranchPythonOperator``, ``ShortCircuitOperator``,
``EmptyOperator`` and ``LatestOnlyOperator``::

    from orchestrator.airflow import DAG, PythonOperator

    with DAG("classic", schedule=None) as dag:
        add = PythonOperator(task_id="add", python_callable=lambda a, b: a + b,
                             op_args=[1, 2], retries=2)
        show = PythonOperator(task_id="show", python_callable=print,
                              op_args=[add.output])
        add >> show

An operator is created inside ``with DAG(...)`` or with ``dag=``; it wires with ``>>``,
``<<``, ``chain`` and lists, passes ``.output`` to TaskFlow calls, and maps with
``Op.partial(...).expand(...)``. Its common arguments are Airflow's
(:mod:`orchestrator.airflow.args`); one we do not support is an import error.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from orchestrator.airflow import args as _args
from orchestrator.airflow import runtime
from orchestrator.authoring.building import _active
from orchestrator.authoring.context_names import RUNNING
from orchestrator.authoring.task_node import Task
from orchestrator.authoring.triggers import TaskDeferred
from orchestrator.authoring.where import caller, definition_error
from orchestrator.authoring.wiring import Wiring
from orchestrator.authoring.xcom_arg import check_same_dag
from orchestrator.scheduling.trigger_rules import TriggerRule

__all__ = [
    "BaseOperator",
    "BranchPythonOperator",
    "EmptyOperator",
    "LatestOnlyOperator",
    "PythonOperator",
    "ShortCircuitOperator",
]


class BaseOperator(Wiring):
    """Airflow's ``BaseOperator``: subclass it with ``execute(self, context)``; the
    strings in ``template_fields`` are rendered before ``execute`` runs, and what it
    returns is the task's result.

    >>> class Hello(BaseOperator):                          # doctest: +SKIP
    ...     template_fields = ("name",)
    ...     def __init__(self, name, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.name = name
    ...     def execute(self, context):
    ...         return f"hello {self.name} on {context['ds']}"
    """

    template_fields: Sequence[str] = ()
    template_ext: Sequence[str] = ()
    ui_color: str = "#fff"
    own_args: frozenset[str] = frozenset()  # the subclass's arguments besides the common
    _branch = False

    def __init__(self, *, task_id: str | None = None, dag: Any = None, **kwargs: Any) -> None:
        where = caller()
        kind = type(self).__name__
        given = {"task_id": task_id, **kwargs}
        task_id = _args.check_task_id(kind, given, where)
        _args.check_known(kind, task_id, kwargs, self.own_args, where)
        owner = dag if dag is not None else (_active[-1] if _active else None)
        if owner is None:
            raise definition_error(
                f"{kind} {task_id!r} is created outside a DAG: create it inside "
                "'with DAG(...):' or pass dag=",
                where,
            )
        self.task_id = task_id
        self.dag = owner
        self.do_xcom_push = kwargs.get("do_xcom_push", True)
        self._mapped: tuple[str, ...] = getattr(self, "_mapped", ())
        options = {**owner.task_defaults, **_args.task_options(kind, given, where)}
        self._task = self._declare(owner, task_id, options, where)
        self.task_id = self._task.task_id  # with its group's prefix

    # -- what the operator declares ---------------------------------------------------
    def _declare(self, dag: Any, task_id: str, options: dict[str, Any], where: Any) -> Task:
        """A Python task calling :meth:`execute` (subclasses declare other kinds)."""
        made = Task(dag, task_id, fn=self._run, branch=self._branch, where=where, **options)
        self._wire_references(made, where)
        return made

    def _wire_references(self, made: Task, where: Any) -> None:
        """The upstream tasks whose results the templated fields reference."""
        for name in self.template_fields:
            for ref in check_same_dag(made, getattr(self, name, None), where):
                made.upstream_ids.add(ref.task.task_id)

    def _run(self, **context: Any) -> Any:
        """The try: a copy with its templated fields (and mapped arguments) filled in,
        then ``execute(context)``."""
        op = copy.copy(self)
        for name in self._mapped:  # object.__setattr__: values now, nothing to wire
            object.__setattr__(op, name, context.pop(name))
        for name in self.template_fields:
            value = getattr(op, name, None)
            object.__setattr__(op, name, runtime.rendered(value, f"{self.task_id}.{name}"))
        value = op.execute(context)
        return value if self.do_xcom_push or self._branch else None

    def execute(self, context: dict[str, Any]) -> Any:
        """What the operator does in a try (override it)."""
        raise NotImplementedError(f"{type(self).__name__} must define execute(self, context)")

    # -- deferral (issue 30): Airflow's self.defer -----------------------------------
    def defer(
        self,
        *,
        trigger: Any,
        method_name: str,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
    ) -> NoReturn:
        """Give up the slot until ``trigger`` fires; the try then resumes in a fresh
        process in ``self.<method_name>(context, event=..., **kwargs)``, as Airflow's."""
        raise TaskDeferred(trigger=trigger, method_name=method_name, kwargs=kwargs, timeout=timeout)

    def resume_method(self, name: str) -> Any:
        """The engine's handle on ``self.<name>`` for a resumed try (engine/deferral_try.py):
        called as ``(ctx, event, **kwargs)``, it calls the method of a copy with the
        templated fields filled in, with Airflow's context dict and ``event=``."""
        if not callable(getattr(self, name, None)):
            return None

        def call(ctx: Any, event: Any, **kwargs: Any) -> Any:
            token = RUNNING.set((ctx, self._task))  # what the context and templates read
            try:
                context = runtime.context_dict()
                op = copy.copy(self)
                for field in self.template_fields:
                    value = runtime.rendered(getattr(op, field, None), f"{self.task_id}.{field}")
                    object.__setattr__(op, field, value)
                value = getattr(op, name)(context, event=event, **kwargs)
            finally:
                RUNNING.reset(token)
            return value if self.do_xcom_push or self._branch else None

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        """A templated field set after the task is made (a custom operator's
        ``self.name = name`` after ``super().__init__``) wires the results it references."""
        object.__setattr__(self, name, value)
        made = self.__dict__.get("_task")
        if made is not None and name in self.template_fields:
            for ref in check_same_dag(made, value, (made.fileloc, made.lineno)):
                made.upstream_ids.add(ref.task.task_id)

    # -- wiring, results, mapping --------------------------------------------------
    def members(self, side: str) -> list[Task]:
        return [self._task]

    def as_setup(self) -> BaseOperator:
        """Make this a setup task (``create.as_setup() >> work``); returns the operator."""
        self._task.as_setup()
        return self

    def as_teardown(
        self, *, setups: Any = None, on_failure_fail_dagrun: bool | None = None
    ) -> BaseOperator:
        """Make this a teardown task of ``setups`` (operators or tasks)."""
        ups = setups if isinstance(setups, list | tuple) else [setups] if setups else None
        tasks = [u._task if isinstance(u, BaseOperator) else u for u in ups] if ups else None
        self._task.as_teardown(setups=tasks, on_failure_fail_dagrun=on_failure_fail_dagrun)
        return self

    def set_downstream(self, others: Any) -> None:
        self._task.set_downstream(others)

    def set_upstream(self, others: Any) -> None:
        self._task.set_upstream(others)

    @property
    def output(self) -> Any:
        """A reference to this operator's result (Airflow's ``.output``)."""
        return self._task.output

    @property
    def doc_md(self) -> str | None:
        """The task's Markdown doc (``t1.doc_md = "..."`` after creating it, as
        Airflow's tutorial does)."""
        return self._task.doc_md

    @doc_md.setter
    def doc_md(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise definition_error(f"{self.task_id!r}: doc_md must be a string (Markdown)")
        self._task.doc_md = value

    @property
    def trigger_rule(self) -> str:
        """The task's trigger rule (``t.trigger_rule = TriggerRule.ALL_DONE`` after
        creating it, as Airflow's examples do)."""
        return self._task.trigger_rule

    @trigger_rule.setter
    def trigger_rule(self, value: str) -> None:
        try:
            self._task.trigger_rule = TriggerRule(value).value
        except ValueError:
            rules = ", ".join(r.value for r in TriggerRule)
            raise definition_error(
                f"{self.task_id!r}: unknown trigger_rule {value!r} (one of: {rules})"
            ) from None

    @property
    def task(self) -> Task:
        """The task this operator declared."""
        return self._task

    @classmethod
    def partial(cls, **fixed: Any) -> _OperatorPartial:
        """``Op.partial(task_id=..., ...).expand(field=[...])``: a mapped operator."""
        return _OperatorPartial(cls, fixed)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.dag.dag_id}.{self.task_id}>"


class _OperatorPartial:
    def __init__(self, cls: type[BaseOperator], fixed: dict[str, Any]) -> None:
        self.cls, self.fixed = cls, fixed

    def _make(self, names: Sequence[str]) -> BaseOperator:
        op = self.cls.__new__(self.cls)
        op._mapped = tuple(names)
        op.__init__(**self.fixed, **{n: None for n in names})  # type: ignore[misc]
        return op

    def expand(self, **sources: Any) -> BaseOperator:
        """One instance per item (their cross product) of each argument's list."""
        op = self._make(list(sources))
        op._task.expand(**sources)
        return op

    def expand_kwargs(self, source: Any) -> BaseOperator:
        """One instance per dict of ``source``."""
        raise definition_error(
            f"{self.cls.__name__}.partial(...).expand_kwargs() is not supported here: use "
            "expand(field=[...]) or a @task mapped with expand_kwargs"
        )


class PythonOperator(BaseOperator):
    """Airflow's ``PythonOperator(python_callable=..., op_args=[...], op_kwargs={...},
    templates_dict={...})``: the callable gets ``op_args``, ``op_kwargs`` and the
    context names it takes (``ds``, ``ti``, ``**kwargs``...); strings in op_args,
    op_kwargs and templates_dict are templates.

    >>> PythonOperator(task_id="hi", python_callable=lambda: "hi")   # doctest: +SKIP
    """

    template_fields = ("templates_dict", "op_args", "op_kwargs")
    own_args = frozenset(
        {"python_callable", "op_args", "op_kwargs", "templates_dict", "templates_exts",
         "show_return_value_in_logs"}
    )  # fmt: skip

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any] | None = None,
        op_args: Sequence[Any] | None = None,
        op_kwargs: dict[str, Any] | None = None,
        templates_dict: dict[str, Any] | None = None,
        templates_exts: Sequence[str] | None = None,
        show_return_value_in_logs: bool = True,
        **kwargs: Any,
    ) -> None:
        if templates_exts:
            raise definition_error(
                f"{type(self).__name__} {kwargs.get('task_id')!r}: templates_exts= is not "
                "supported here: read the file in the callable"
            )
        if not callable(python_callable):
            raise definition_error(
                f"{type(self).__name__} {kwargs.get('task_id')!r}: python_callable= must be "
                f"a function, got {python_callable!r}"
            )
        self.python_callable = python_callable
        self.op_args = list(op_args or ())
        self.op_kwargs = dict(op_kwargs or {})
        self.templates_dict = templates_dict
        super().__init__(**kwargs)

    def execute(self, context: dict[str, Any]) -> Any:
        context = {**context, "templates_dict": self.templates_dict}
        args, kwargs = tuple(self.op_args or ()), dict(self.op_kwargs or {})
        return runtime.call_with_context(self.python_callable, args, kwargs, context)


class BranchPythonOperator(PythonOperator):
    """Airflow's ``BranchPythonOperator``: the callable returns the task id(s) to follow
    among the direct downstream tasks; the others are skipped.

    >>> BranchPythonOperator(task_id="pick", python_callable=lambda: "full")  # doctest: +SKIP
    """

    _branch = True


class ShortCircuitOperator(PythonOperator):
    """Airflow's ``ShortCircuitOperator``: a falsy result skips the direct downstream
    tasks (and, by trigger rule, theirs).

    >>> ShortCircuitOperator(task_id="any", python_callable=lambda: False)  # doctest: +SKIP
    """

    _branch = True
    own_args = PythonOperator.own_args | {"ignore_downstream_trigger_rules"}

    def __init__(self, *, ignore_downstream_trigger_rules: bool = True, **kwargs: Any) -> None:
        if not isinstance(ignore_downstream_trigger_rules, bool):
            raise definition_error("ignore_downstream_trigger_rules must be True or False")
        self.ignore_downstream_trigger_rules = ignore_downstream_trigger_rules
        super().__init__(**kwargs)

    def execute(self, context: dict[str, Any]) -> Any:
        value = super().execute(context)
        context["ti"].log.info("condition %r: %s", value, "continue" if value else "skip")
        return runtime.direct_downstream(self._task) if value else []


def _nothing() -> None:
    return None


class EmptyOperator(BaseOperator):
    """Airflow's ``EmptyOperator``: does nothing (a join or a placeholder).

    >>> EmptyOperator(task_id="join", trigger_rule="none_failed")  # doctest: +SKIP
    """

    def _declare(self, dag: Any, task_id: str, options: dict[str, Any], where: Any) -> Task:
        return Task(dag, task_id, fn=_nothing, where=where, **options)


class LatestOnlyOperator(BaseOperator):
    """Airflow's ``LatestOnlyOperator``: in a scheduled (or backfill) run that is not
    the latest one (now is past the next fire time), its direct downstream tasks are
    skipped; manual and asset-triggered runs always continue.

    >>> LatestOnlyOperator(task_id="latest_only") >> notify  # doctest: +SKIP
    """

    _branch = True

    def execute(self, context: dict[str, Any]) -> Any:
        follow = runtime.direct_downstream(self._task)
        run_type = str(context["run_id"]).rsplit("__", 2)[-2]
        if run_type not in ("scheduled", "backfill"):
            return follow
        left = context["data_interval_end"]
        right = self.dag.schedule.next_after(left)
        now = datetime.fromtimestamp(time.time(), UTC)
        latest = left < now and (right is None or now <= right)
        context["ti"].log.info(
            "latest only: window %s .. %s, now %s: %s", left, right, now,
            "the latest run, continue" if latest else "not the latest run, skip",
        )  # fmt: skip
        return follow if latest else []
