"""Port an Airflow DAG file by its imports (issue 26 item 2): every import of an Airflow
name (Airflow 3's ``airflow.sdk``, ``airflow.providers.standard...``, and Airflow 2's
``airflow.models``, ``airflow.operators.*``, ``airflow.sensors.*``,
``airflow.decorators``...) that :mod:`orchestrator.airflow` exports is rewritten to
``from orchestrator.airflow import ...``, replacing exactly the import statement's
lines; then the result is parsed and its calls checked against what the adapters take.

    >>> report = port_source("from airflow.sdk import DAG, task\\n", "etl.py")
    >>> report.text, report.verdict
    ('from orchestrator.airflow import DAG, task\\n', 'ported')

Nothing here writes a file or imports the DAG file: ``orchestrator dags port``
(``orchestrator/cli/port.py``) does the writing, only with ``--write``.
"""

from __future__ import annotations

import ast
import difflib
import inspect
from dataclasses import dataclass, field
from typing import Any

import orchestrator.airflow as target
from orchestrator.airflow import args as _args
from orchestrator.airflow.decorators import MISSING_KINDS, TASK_ARGS
from orchestrator.airflow.sdk import DAG_UNSUPPORTED

TARGET = "orchestrator.airflow"
# Airflow 2 names that are another of Airflow 3's here
RENAMED = {
    "DummyOperator": "EmptyOperator",
    "Dataset": "Asset",
    "SimpleHttpOperator": "HttpOperator",
}
# names supported with a difference worth reading before the first run
DIFFERENCES = {
    "BashOperator": "runs in the DAG file's folder (Airflow: a temporary one); env= adds to "
    "the task's environment",
    "ShortCircuitOperator": "skips the direct downstream tasks; theirs follow by trigger rule",
    "LatestOnlyOperator": "skips the direct downstream tasks; theirs follow by trigger rule",
    "Variable": "Variable.get only inside a task (files parse without credentials); "
    "Variable.set is refused",
    "Label": "the edge label is not stored or drawn",
    "FileSensor": "checked by the worker and slot-free whatever mode= says",
    "ExternalTaskSensor": "checked by the worker and slot-free whatever mode= says",
    "HttpOperator": "sent with requests in the try; a status >= 400 fails it",
    "Asset": "a bare name without :// gets the URI asset://<name>",
}
# names that do not port, with what to write instead (the others: docs/porting.md)
HINTS = {
    "days_ago": "write the date: start_date=datetime(2026, 1, 1)",
    "AssetAlias": "name each Asset by its URI",
    "ExternalTaskMarker": "clearing across DAGs is not offered; clear each DAG's run",
    "BashSensor": "a PythonSensor running the command with subprocess",
    "DayOfWeekSensor": "a @task.short_circuit on the logical date's weekday",
    "BranchDayOfWeekOperator": "a @task.branch on the logical date's weekday",
    "EmailOperator": "an email alert (orchestrator.alerts.email) or a @task with smtplib",
    "XComArg": "a task's .output or a TaskFlow call's result",
    "Context": "annotate with dict (the context is a dict)",
}
PORTED, WARNED, NOT_PORTABLE = "ported", "ported with warnings", "not portable"


@dataclass
class PortReport:
    """What porting one file gives: the new text, the verdict and its reasons.

    >>> port_source("from airflow.sdk import AssetAlias\\n", "a.py").verdict
    'not portable'
    """

    path: str
    original: str
    text: str
    rewritten: int = 0  # import statements rewritten
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.problems:
            return NOT_PORTABLE
        return WARNED if self.warnings else PORTED

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def diff(self) -> str:
        """The unified diff from the original to the ported text."""
        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                fromfile=f"a/{self.path.lstrip('/')}",
                tofile=f"b/{self.path.lstrip('/')}",
            )
        )


def _is_airflow(module: str | None) -> bool:
    return module is not None and (module == "airflow" or module.startswith("airflow."))


def _format(names: list[tuple[str, str | None]], indent: str) -> str:
    parts = [n if a is None or a == n else f"{n} as {a}" for n, a in names]
    line = f"{indent}from {TARGET} import {', '.join(parts)}"
    if len(line) <= 99:
        return line
    inner = "".join(f"{indent}    {p},\n" for p in parts)
    return f"{indent}from {TARGET} import (\n{inner}{indent})"


def _shared_lines(tree: ast.Module) -> set[int]:
    """Lines holding more than one statement (``import os; from airflow import DAG``)."""
    starts: dict[int, int] = {}
    for node in ast.walk(tree):  # compound ones too: "if x: from airflow import y"
        if isinstance(node, ast.stmt):
            starts[node.lineno] = starts.get(node.lineno, 0) + 1
    return {line for line, n in starts.items() if n > 1}


def port_source(source: str, path: str) -> PortReport:
    """Port one file's text (see the module docstring); never raises for its content."""
    report = PortReport(path, source, source)
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        report.problems.append(f"line {exc.lineno}: not valid Python: {exc.msg}")
        return report
    exported = set(target.__all__)
    lines = source.splitlines(keepends=True)
    shared = _shared_lines(tree)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_airflow(alias.name):
                    report.problems.append(
                        f"line {node.lineno}: import {alias.name}: a module import of Airflow "
                        "cannot be ported; import its names (from airflow.x import Name)"
                    )
            continue
        if not isinstance(node, ast.ImportFrom) or node.level or not _is_airflow(node.module):
            continue
        if node.lineno in shared or (node.end_lineno or node.lineno) in shared:
            report.problems.append(
                f"line {node.lineno}: from {node.module} import ... shares its line with "
                "another statement: put it on a line of its own and port again"
            )
            continue
        kept: list[tuple[str, str | None]] = []
        left: list[ast.alias] = []
        for alias in node.names:
            name = RENAMED.get(alias.name, alias.name)
            if alias.name == "*":
                report.problems.append(
                    f"line {node.lineno}: from {node.module} import *: name the imports"
                )
                left.append(alias)
            elif name in exported:
                kept.append((name, alias.asname or (alias.name if name != alias.name else None)))
                if name != alias.name:
                    report.warnings.append(
                        f"line {node.lineno}: {alias.name} is {name} here (imported as "
                        f"{alias.asname or alias.name})"
                    )
                if name in DIFFERENCES:
                    report.warnings.append(f"line {node.lineno}: {name}: {DIFFERENCES[name]}")
            else:
                left.append(alias)
                hint = HINTS.get(alias.name, "see docs/porting.md for the alternative")
                report.problems.append(
                    f"line {node.lineno}: {alias.name} (from {node.module}) is not in "
                    f"{TARGET}: {hint}"
                )
        if not kept:
            continue
        indent = lines[node.lineno - 1][: node.col_offset]
        new = _format(kept, indent)
        if left:
            rest = ", ".join(
                a.name if a.asname is None else f"{a.name} as {a.asname}" for a in left
            )
            new += f"\n{indent}from {node.module} import {rest}"
        edits.append((node.lineno, node.end_lineno or node.lineno, new + "\n"))
    for first, last, new in sorted(edits, reverse=True):
        tail = lines[last - 1]
        if not tail.endswith("\n"):  # the file's last line, without a newline
            new = new[:-1]
        lines[first - 1 : last] = [new]
        report.rewritten += 1
    report.text = "".join(lines)
    _check_result(report, _original_line(sorted(edits)))
    report.problems.sort(key=_line_of)
    report.warnings.sort(key=_line_of)
    return report


def _line_of(message: str) -> int:
    head = message.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 0


# -- the result, parsed and checked ----------------------------------------------------
def _accepted(cls: Any) -> set[str] | None:
    """The keyword arguments an adapter class takes (None: any)."""
    names: set[str] = set(_args.COMMON) | set(getattr(cls, "own_args", ()))
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self":
                names.add(p.name)
    return names


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> orchestrator.airflow name, for the imports of the ported text."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == TARGET:
            for alias in node.names:
                out[alias.asname or alias.name] = alias.name
    return out


def _original_line(edits: list[tuple[int, int, str]]) -> Any:
    """A line number of the ported text -> the line of the original it came from."""

    def original(line: int) -> int:
        shift = 0
        for first, last, new in edits:
            count = new.count("\n")
            if line < first + shift:
                break
            if line < first + shift + count:
                return first
            shift += count - (last - first + 1)
        return line - shift

    return original


def _check_result(report: PortReport, original: Any) -> None:
    try:
        tree = ast.parse(report.text, filename=report.path)
    except SyntaxError as exc:  # pragma: no cover - a rewrite keeps the syntax
        report.problems.append(f"line {exc.lineno}: the ported text does not parse: {exc.msg}")
        return
    names = _imported_names(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        mapped = _mapped_problem(node, names)
        if mapped:
            report.problems.append(f"line {original(node.lineno)}: {mapped}")
            continue
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if names.get(func.value.id) == "task" and func.attr in MISSING_KINDS:
                report.problems.append(
                    f"line {original(node.lineno)}: @task.{func.attr} is not supported here: "
                    f"{MISSING_KINDS[func.attr]}"
                )
            continue
        if not isinstance(func, ast.Name) or func.id not in names:
            continue
        name = names[func.id]
        given = [k.arg for k in node.keywords if k.arg is not None]
        for arg in given:
            why = _refused(name, arg)
            if why:
                report.problems.append(f"line {original(node.lineno)}: {name}({arg}=...): {why}")


def _mapped_problem(node: ast.Call, names: dict[str, str]) -> str | None:
    """Why ``Op.partial(...).expand(...)`` / ``.expand_kwargs(...)`` of a classic
    operator does not map here (None: it does, or it is not such a call)."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("expand", "expand_kwargs")):
        return None
    inner = func.value
    if not (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Attribute)
        and inner.func.attr == "partial"
        and isinstance(inner.func.value, ast.Name)
        and inner.func.value.id in names
    ):
        return None
    name = names[inner.func.value.id]
    if not hasattr(getattr(target, name, None), "own_args"):
        return None
    if func.attr == "expand_kwargs":
        return (
            f"{name}.partial(...).expand_kwargs() is not supported here: use "
            "expand(field=[...]) or a @task mapped with expand_kwargs"
        )
    if name == "BashOperator":
        from orchestrator.airflow.bash import MAPPABLE

        other = [k.arg for k in node.keywords if k.arg is not None and k.arg not in MAPPABLE]
        if other:
            return (
                f"BashOperator.partial(...).expand({other[0]}=...): only bash_command can "
                "be mapped here: map the commands, or a @task.bash"
            )
    return None


def _refused(name: str, arg: str) -> str | None:
    """Why ``name(arg=...)`` is refused here (None: it is taken)."""
    if name == "DAG":
        return DAG_UNSUPPORTED.get(arg)
    if name == "task":
        if arg in _args.UNSUPPORTED:
            return _args.UNSUPPORTED[arg]
        return None if arg in _args.COMMON or arg in TASK_ARGS else "not a @task argument here"
    cls = getattr(target, name, None)
    if not inspect.isclass(cls) or not hasattr(cls, "own_args"):
        return None
    if arg in _args.UNSUPPORTED:
        return _args.UNSUPPORTED[arg]
    accepted = _accepted(cls)
    if accepted is not None and arg not in accepted:
        return f"{name} takes no {arg}= here (docs/porting.md)"
    return None
