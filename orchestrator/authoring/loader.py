"""Importing one DAG file and collecting the DAGs it defines, and reading its source.

Only the DAG processor's child processes and the task runner call :func:`load_file`:
it runs user code. :func:`read_source` is how the processor reads the text stored
with each DAG version (the web UI shows that, and never reads a file itself).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from typing import Any

from orchestrator.authoring import dag as dag_module
from orchestrator.errors import DagDefinitionError


class DagImportError(Exception):
    """A DAG file could not be imported; ``message`` names the file and line."""

    def __init__(self, message: str, tb: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.tb = tb


MAX_SOURCE_BYTES = 1024 * 1024  # the part of a DAG file stored with its versions (docs/webui.md)


def read_source(path: str) -> dict[str, Any] | None:
    """The text of the DAG file at ``path``, as stored with the versions parsed from it.

    ``{"text", "sha256", "size", "truncated"}``: the first :data:`MAX_SOURCE_BYTES`
    bytes decoded as UTF-8 (undecodable bytes and NULs become U+FFFD), the sha256 and
    size of the whole file. ``path`` is the file the processor was asked to parse,
    never a path the DAG names (user code can forge a DAG's ``fileloc``). None if the
    file cannot be read.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    text = raw[:MAX_SOURCE_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return {
        "text": text,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "size": len(raw),
        "truncated": len(raw) > MAX_SOURCE_BYTES,
    }


def display_path(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def load_file(path: str) -> list[dag_module.DAG]:
    """Import ``path`` and return its DAGs, validated. Raises DagImportError."""
    path = os.path.abspath(path)
    name = "orchestrator_dag_" + hashlib.sha1(path.encode()).hexdigest()[:12]
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    dag_module._created.clear()
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise DagImportError(f"{display_path(path)}: not an importable Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        dag_module._loading.append(path)
        try:
            spec.loader.exec_module(module)
        finally:
            dag_module._loading.remove(path)
        dags = list(dag_module._created)
        seen: dict[str, dag_module.DAG] = {}
        for d in dags:
            if d.dag_id in seen:
                raise DagDefinitionError(
                    f"dag_id {d.dag_id!r} is defined twice in this file (first at line {seen[d.dag_id].lineno})",
                    fileloc=d.fileloc,
                    lineno=d.lineno,
                )
            seen[d.dag_id] = d
            d.validate()
        return dags
    except DagImportError:
        raise
    except DagDefinitionError as exc:
        raise DagImportError(_shorten(str(exc), path), traceback.format_exc()) from None
    except SyntaxError as exc:
        where = f"{display_path(path)}:{exc.lineno}" if exc.lineno else display_path(path)
        raise DagImportError(f"{where}: SyntaxError: {exc.msg}", traceback.format_exc()) from None
    except SystemExit as exc:
        line = _line_in(exc, path)
        where = f"{display_path(path)}:{line}" if line else display_path(path)
        raise DagImportError(
            f"{where}: the file called sys.exit({exc.code!r}) while being imported",
            traceback.format_exc(),
        ) from None
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything
        line = _line_in(exc, path)
        where = f"{display_path(path)}:{line}" if line else display_path(path)
        raise DagImportError(
            f"{where}: {type(exc).__name__}: {exc}", traceback.format_exc()
        ) from None
    finally:
        dag_module._created.clear()


def _line_in(exc: BaseException, path: str) -> int | None:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == path:
            line = frame.lineno
    return line


def _shorten(message: str, path: str) -> str:
    return message.replace(path, display_path(path))
