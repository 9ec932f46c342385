"""A Python task's own interpreter: ``@task.virtualenv`` and ``@task.external_python``.

The declaration is plain data checked when the DAG file is imported; the function's
source is taken then too (``inspect.getsource``, decorators stripped, line numbers kept),
because the function runs in another interpreter that imports neither the DAG file nor
the orchestrator: it must be self-contained (its imports inside it). Like Airflow's
``PythonVirtualenvOperator`` and ``ExternalPythonOperator``::

    @task.virtualenv(requirements=["tabulate==0.10.0"])
    def pretty(ctx):
        import tabulate
        return tabulate.tabulate(ctx.upstream("load"))

>>> python_env_options("virtualenv", ["tabulate==0.10.0"], None, False, (None, None))
{'kind': 'virtualenv', 'requirements': ['tabulate==0.10.0'], 'python': None, \
'system_site_packages': False}
"""

from __future__ import annotations

import ast
import builtins
import dis
import inspect
import textwrap
from collections.abc import Callable, Iterable
from types import CodeType
from typing import Any

from orchestrator.authoring.where import Where
from orchestrator.authoring.where import definition_error as _fail


def python_env_options(
    kind: str,
    requirements: Iterable[str] | str | None,
    python: str | None,
    system_site_packages: bool,
    where: Where,
) -> dict[str, Any]:
    """The checked declaration (what the DAG's spec stores); DagDefinitionError."""
    if kind == "external_python":
        if not isinstance(python, str) or not python.startswith("/") or "\n" in python:
            raise _fail(
                f"@task.external_python needs python='/absolute/path/bin/python', got {python!r}",
                where,
            )
        return {"kind": kind, "python": python}
    if isinstance(requirements, str):
        requirements = [requirements]
    reqs = list(requirements or ())
    for req in reqs:
        if not isinstance(req, str) or not req.strip() or any(c in req for c in "\r\n\x00"):
            raise _fail(f"@task.virtualenv: requirement {req!r} must be a one-line string", where)
        if req.strip().startswith("-"):
            raise _fail(
                f"@task.virtualenv: requirement {req!r} is an installer option, not a "
                "requirement (use pip's configuration for indexes)",
                where,
            )
    if python is not None and (not isinstance(python, str) or not python or "\n" in python):
        raise _fail(
            f"@task.virtualenv: python must be a path or command name, got {python!r}", where
        )
    if not isinstance(system_site_packages, bool):
        raise _fail("@task.virtualenv: system_site_packages must be True or False", where)
    return {
        "kind": kind,
        "requirements": [r.strip() for r in reqs],
        "python": python,
        "system_site_packages": system_site_packages,
    }


def _global_names(code: CodeType) -> set[str]:
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= _global_names(const)
    return names


def function_source(fn: Callable[..., Any], owner: str, where: Where) -> dict[str, Any]:
    """What the other interpreter needs to define and call ``fn``: its source with the
    decorators stripped (blank lines in front keep the DAG file's line numbers), its
    name, its file and whether it takes the context. DagDefinitionError when ``fn``
    cannot run apart from its DAG file."""
    if inspect.iscoroutinefunction(fn):
        raise _fail(f"{owner}: an async function cannot run in its own interpreter", where)
    if fn.__code__.co_freevars:
        names = ", ".join(fn.__code__.co_freevars)
        raise _fail(
            f"{owner}: the function uses variables of its enclosing function ({names}); "
            "a task in its own interpreter must be self-contained",
            where,
        )
    outside = sorted(
        n
        for n in _global_names(fn.__code__)
        if n in fn.__globals__ and n != fn.__name__ and not hasattr(builtins, n)
    )
    if outside:
        raise _fail(
            f"{owner}: the function uses the DAG file's global name(s) {', '.join(outside)}; "
            "a task in its own interpreter runs apart from its DAG file: import or define "
            "them inside the function",
            where,
        )
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise _fail(f"{owner}: cannot read the function's source: {exc}", where) from None
    text = textwrap.dedent("".join(lines))
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, IndexError) as exc:  # e.g. a lambda in the middle of a line
        raise _fail(f"{owner}: cannot read the function's source: {exc}", where) from None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
        raise _fail(f"{owner}: a task in its own interpreter must be a 'def' function", where)
    body = text.splitlines(keepends=True)[node.lineno - 1 :]
    params = inspect.signature(fn).parameters.values()
    takes_context = any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )
    return {
        "source": "\n" * (first + node.lineno - 2) + "".join(body),
        "name": fn.__name__,
        "filename": fn.__code__.co_filename,
        "takes_context": takes_context,
    }
