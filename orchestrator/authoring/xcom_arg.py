"""References to a task's future result (Airflow's ``XComArg``), issue 25.

Calling a task inside a DAG returns one; passed to another task's call it is both an
edge and an argument::

    with DAG("etl", schedule=None) as dag:
        @task
        def extract():
            return {"rows": [1, 2, 3], "total": 3}

        @task
        def load(rows, total):
            ...

        data = extract()                         # XComArg: extract's result
        load(data["rows"], total=data["total"])  # extract >> load; load gets the values

At parse time a reference has no value: turning it into text, a truth value or an
iteration (an f-string, ``str()``, ``if ref:``, ``for x in ref``) is an import error
naming file:line. At run time :func:`resolve` replaces every reference inside the
arguments (lists, tuples and dicts too) by the upstream result, one key at a time for
``ref["key"]``. This module does not import ``task_node.py``: a task is known by its
shape (``task_id``, ``dag``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

from orchestrator.authoring.where import Where
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.authoring.wiring import Wiring

MARKER = "__xcomarg__"  # a reference's JSON form: {"__xcomarg__": task_id, "key": [...]}
PARAM_MARKER = "__param__"  # a param's: {"__param__": name}
# a mapped task group's argument (issue 25 item 7): {"__mapped_arg__": name, "key": [...]}
MAPPED_MARKER = "__mapped_arg__"


class _NoValueYet:
    """What a value that exists only when the run runs cannot be at parse time: each
    of these is an import error naming file:line (``_refuse``, by the subclass)."""

    _ITERATED = "iterated (for, list(), unpacking)"

    def _refuse(self, what: str) -> NoReturn:
        raise NotImplementedError

    def __str__(self) -> str:
        self._refuse("turned into text (str(), an f-string, %-formatting)")

    def __format__(self, spec: str) -> str:
        self._refuse("formatted into text (an f-string or format())")

    def __bool__(self) -> bool:
        self._refuse("tested for truth (if/and/or/not)")

    def __iter__(self) -> Iterator[Any]:
        self._refuse(self._ITERATED)

    def __len__(self) -> int:
        self._refuse("measured (len())")

    def __contains__(self, item: Any) -> bool:
        self._refuse("searched ('in')")


@dataclass(frozen=True)
class ParamRef(_NoValueYet):
    """A DAG param as a value: ``load.expand(path=dag.param("paths"))``, or an argument
    of a call (``@dag`` passes one per parameter), resolved to the run's param. Like a
    reference it has no value while the file is parsed."""

    name: str

    def _refuse(self, what: str) -> NoReturn:
        raise _fail(
            f"param {self.name!r} has its value only when the run runs, so it cannot be "
            f"{what} while the DAG file is parsed: pass it to a task as an argument and "
            "use the value inside that task (or write {{ params." + self.name + " }} in a "
            "template)",
            _caller(),
        )


class MappedArgument(_NoValueYet):
    """An argument of a mapped task group's function (Airflow's ``MappedArgument``):
    each group instance's item, given to the tasks the function calls::

        @task_group
        def per_file(path):
            load(clean(path))            # clean[i] gets item i's path

        per_file.expand(path=list_files())

    Like a reference it has no value while the file is parsed; a task of the group
    receives its instance's value (``arg["key"]`` one key of it)."""

    def __init__(self, group: str, name: str, keys: tuple[str, ...] = ()) -> None:
        self.group = group
        self.name = name
        self.keys = keys

    def __getitem__(self, key: Any) -> MappedArgument:
        if not isinstance(key, str):
            raise _fail(f"{self._name()}[{key!r}]: an item's key is a string", _caller())
        return MappedArgument(self.group, self.name, (*self.keys, key))

    def _name(self) -> str:
        return self.name + "".join(f"[{k!r}]" for k in self.keys)

    def _refuse(self, what: str) -> NoReturn:
        raise _fail(
            f"argument {self._name()} of mapped task group {self.group!r} has a value only "
            f"in each group instance, so it cannot be {what} while the DAG file is parsed: "
            "pass it to a task of the group as an argument and use the value inside it",
            _caller(),
        )

    def __repr__(self) -> str:
        return f"<MappedArgument {self.group}.{self._name()}>"


def mapped_arguments(value: Any) -> list[MappedArgument]:
    """Every mapped task group argument inside ``value`` (lists, tuples, dicts)."""
    if isinstance(value, MappedArgument):
        return [value]
    if isinstance(value, list | tuple | set | frozenset):
        return [r for item in value for r in mapped_arguments(item)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in mapped_arguments(v)]
    return []


class XComArg(_NoValueYet, Wiring):
    """The future result of ``task`` (one key of it with ``ref["key"]``).

    ``ref >> other`` and ``other >> ref`` wire ``task`` like the task itself.
    """

    def __init__(self, task: Any, keys: tuple[str, ...] = ()) -> None:
        self.task = task
        self.keys = keys

    @property
    def task_id(self) -> str:
        return self.task.task_id

    def __getitem__(self, key: Any) -> XComArg:
        if not isinstance(key, str):
            raise _fail(
                f"{self._name()}[{key!r}]: a result's key is a string (a JSON object's key)",
                _caller(),
            )
        return XComArg(self.task, (*self.keys, key))

    # -- wiring: as the task ------------------------------------------------------
    def set_downstream(self, others: Any) -> None:
        self.task.set_downstream(others)

    def set_upstream(self, others: Any) -> None:
        self.task.set_upstream(others)

    # -- setup and teardown: as the task (Airflow's ``t3.as_teardown(setups=t1)`` on the
    # results of calls, ``with teardown_call(setup_call()):``; issue 26) -----------------
    def as_setup(self) -> XComArg:
        self.task.as_setup()
        return self

    def as_teardown(
        self, *, setups: Any = None, on_failure_fail_dagrun: bool | None = None
    ) -> XComArg:
        ups = setups if isinstance(setups, list | tuple) else [setups] if setups is not None else []
        tasks = [u.task if isinstance(u, XComArg) else u for u in ups]
        self.task.as_teardown(setups=tasks or None, on_failure_fail_dagrun=on_failure_fail_dagrun)
        return self

    def __enter__(self) -> XComArg:
        self.task.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.task.__exit__(*exc)

    # -- what a reference cannot be at parse time -------------------------------------
    def _refuse(self, what: str) -> NoReturn:
        raise _fail(
            f"{self._name()} is a reference to a result that exists only when the run "
            f"runs, so it cannot be {what} while the DAG file is parsed: pass it to a "
            f"task as an argument (load({self._name()})) and use the value inside that task",
            _caller(),
        )

    _ITERATED = "iterated (for, list(), unpacking); map over it with .expand(x=...)"

    def _name(self) -> str:
        return f"{self.task.task_id}()" + "".join(f"[{k!r}]" for k in self.keys)

    def __repr__(self) -> str:
        return f"<XComArg {self._name()}>"


def as_reference(value: Any) -> XComArg | None:
    """``value`` as a reference: an XComArg, or a task passed as an argument (its
    whole result, as Airflow's ``task.output``); None for anything else."""
    if isinstance(value, XComArg):
        return value
    if hasattr(value, "task_id") and hasattr(value, "upstream_ids") and hasattr(value, "dag"):
        return XComArg(value)
    return None


def references(value: Any) -> list[XComArg]:
    """Every reference inside ``value`` (arguments: lists, tuples, sets and dicts)."""
    ref = as_reference(value)
    if ref is not None:
        return [ref]
    if isinstance(value, list | tuple | set | frozenset):
        return [r for item in value for r in references(item)]
    if isinstance(value, dict):
        return [r for k, v in value.items() for r in references(k) + references(v)]
    return []


def check_same_dag(task: Any, value: Any, where: Where) -> list[XComArg]:
    """The references of ``value``; a reference to a task of another DAG fails here."""
    found = references(value)
    for ref in found:
        if ref.task.dag is not task.dag:
            raise _fail(
                f"task {task.task_id!r} of DAG {task.dag.dag_id!r} is given "
                f"{ref._name()}, a result of DAG {ref.task.dag.dag_id!r}: a task receives "
                "results of tasks of its own DAG only (across DAGs, write an Asset and "
                "schedule on it, or wait with an external task sensor)",
                where,
            )
        if ref.task is task:
            raise _fail(f"task {task.task_id!r} is given its own result", where)
    return found


def spec_form(value: Any, *, strict: bool = False) -> Any:
    """``value`` as JSON for the DAG spec (its hash and the UI): a reference becomes
    ``{"__xcomarg__": task_id, "key": [...]}``, a value JSON cannot hold its type name
    (the task process uses the live values of the DAG file, not this form), or, with
    ``strict``, stays as it is (``partial()``'s values travel as JSON: the caller checks)."""
    ref = as_reference(value)
    if ref is not None:
        return {MARKER: ref.task.task_id, "key": list(ref.keys)}
    if isinstance(value, ParamRef):
        return {PARAM_MARKER: value.name}
    if isinstance(value, MappedArgument):
        return {MAPPED_MARKER: value.name, "key": list(value.keys)}
    if isinstance(value, list | tuple):
        return [spec_form(v, strict=strict) for v in value]
    if isinstance(value, dict):
        return {(k if strict else str(k)): spec_form(v, strict=strict) for k, v in value.items()}
    if strict:
        return value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return f"<{type(value).__name__}>"
    return value


def resolve(
    value: Any,
    result_of: Callable[[str], Any],
    task_id: str,
    params: dict | None = None,
    item: dict | None = None,
) -> Any:
    """``value`` with every reference replaced by its result, read with
    ``result_of(upstream_task_id)``, every param by its value in ``params`` and every
    mapped task group argument by its value in the group instance's ``item``; a missing
    key fails naming both tasks and the key. Accepts the live objects of the DAG file
    and the spec's JSON form alike."""

    def again(v: Any) -> Any:
        return resolve(v, result_of, task_id, params, item)

    if isinstance(value, MappedArgument):
        return _item_value(item, value.name, value.keys, task_id)
    if isinstance(value, dict) and MAPPED_MARKER in value and set(value) <= {MAPPED_MARKER, "key"}:
        return _item_value(item, value[MAPPED_MARKER], tuple(value.get("key") or ()), task_id)

    ref = as_reference(value)
    if ref is not None:
        return pick(result_of(ref.task.task_id), ref.task.task_id, ref.keys, task_id)
    if isinstance(value, ParamRef):
        return (params or {}).get(value.name)
    if isinstance(value, dict) and MARKER in value and set(value) <= {MARKER, "key"}:
        up = value[MARKER]
        return pick(result_of(up), up, tuple(value.get("key") or ()), task_id)
    if isinstance(value, dict) and set(value) == {PARAM_MARKER}:
        return (params or {}).get(value[PARAM_MARKER])
    if isinstance(value, list):
        return [again(v) for v in value]
    if isinstance(value, tuple):
        return tuple(again(v) for v in value)
    if isinstance(value, dict):
        return {again(k): again(v) for k, v in value.items()}
    return value


def pick(result: Any, upstream: str, keys: tuple[str, ...], task_id: str) -> Any:
    """One key (path) of an upstream result; KeyError naming the tasks and the key."""
    for i, key in enumerate(keys):
        path = f"{upstream}()" + "".join(f"[{k!r}]" for k in keys[: i + 1])
        if not isinstance(result, dict):
            raise KeyError(
                f"task {task_id!r}: argument {path}: {upstream!r} returned "
                f"{type(result).__name__}, not an object with key {key!r}"
            )
        if key not in result:
            known = ", ".join(map(repr, sorted(result))) or "none"
            raise KeyError(
                f"task {task_id!r}: argument {path}: {upstream!r} returned no key {key!r} "
                f"(its keys: {known})"
            )
        result = result[key]
    return result


def _item_value(item: dict | None, name: str, keys: tuple[str, ...], task_id: str) -> Any:
    """A mapped task group argument's value in this instance's item (issue 25 item 7)."""
    if item is None or name not in item:
        known = ", ".join(map(repr, sorted(item or {}))) or "none"
        raise KeyError(
            f"task {task_id!r}: the mapped task group's item has no argument {name!r} "
            f"(its keys: {known})"
        )
    return pick(item[name], name, keys, task_id)
