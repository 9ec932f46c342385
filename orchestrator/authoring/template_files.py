"""Template files: a shell command or ``env=`` value naming a ``.sh``/``.bash``/``.sql``
file is that file's text, rendered as a template (Airflow's ``template_ext``).

The file is looked for in the DAG's ``template_searchpath`` folders (relative to the
DAG file's folder unless absolute), then in the DAG file's folder. It is read when the
DAG file is parsed: its text is stored with the DAG version (so every worker runs the
text that was checked, and the version changes when the file does), and the DAG
processor parses the DAG file again when a template file it read changes. As in
Airflow, a value with a space (``"scripts/run.sh "``) is a command, not a file.

>>> is_template_file("scripts/load.sh"), is_template_file("bash scripts/load.sh")
(True, False)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

TEMPLATE_EXT = (".sh", ".bash", ".sql")
MAX_TEMPLATE_BYTES = 1024 * 1024

# the files looked up while a DAG file is imported: (path, mtime_ns, size) as found
# before reading, (path,) for one that does not exist
_recorded: list[tuple[Any, ...]] | None = None


class TemplateFileError(ValueError):
    """A template file that cannot be used; the message names it and where it was sought."""


def is_template_file(value: object) -> bool:
    """Whether ``value`` names a template file: one word ending in a template extension."""
    return (
        isinstance(value, str)
        and value.endswith(TEMPLATE_EXT)
        and value == value.strip()
        and not any(c.isspace() for c in value)
    )


def search_path(dag_fileloc: str | None, folders: Iterable[str]) -> list[str]:
    """The folders a template file is looked for in, in order."""
    base = os.path.dirname(os.path.abspath(dag_fileloc)) if dag_fileloc else os.getcwd()
    out = [os.path.normpath(os.path.join(base, f)) for f in folders]
    return [*out, base] if base not in out else out


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def read_template_file(name: str, folders: list[str]) -> tuple[str, str]:
    """(text, display path) of template file ``name``; TemplateFileError if missing,
    unreadable, not UTF-8 or larger than :data:`MAX_TEMPLATE_BYTES`."""
    candidates = [name] if os.path.isabs(name) else [os.path.join(f, name) for f in folders]
    for path in candidates:
        _record(path)
        if os.path.isfile(path):
            break
    else:
        where = ", ".join(_shown(f) for f in folders) if not os.path.isabs(name) else "/"
        raise TemplateFileError(
            f"template file {name!r} not found (looked in: {where}); a value ending in "
            f"{', '.join(TEMPLATE_EXT)} names a template file: add a space after it "
            f"({name + ' '!r}) to run it as a command instead"
        )
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TEMPLATE_BYTES + 1)
    except OSError as exc:
        raise TemplateFileError(f"template file {_shown(path)}: cannot read it: {exc}") from None
    if len(raw) > MAX_TEMPLATE_BYTES:
        raise TemplateFileError(
            f"template file {_shown(path)} is larger than {MAX_TEMPLATE_BYTES} bytes"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateFileError(
            f"template file {_shown(path)} is not UTF-8 text (byte {exc.start})"
        ) from None
    return text, _shown(path)


def _record(path: str) -> None:
    if _recorded is None:
        return
    path = os.path.abspath(path)
    try:
        st = os.stat(path)
    except OSError:
        _recorded.append((path,))
    else:
        _recorded.append((path, st.st_mtime_ns, st.st_size))


def start_recording() -> None:
    """Note every template file looked up from now (found or not) for :func:`recorded`."""
    global _recorded
    _recorded = []


def recorded() -> list[tuple[Any, ...]]:
    """The template files looked up since :func:`start_recording`, each as
    ``(path, mtime_ns, size)`` when it was read (``(path,)``: it did not exist), in the
    order of :func:`signatures`; stops recording."""
    global _recorded
    first: dict[str, tuple[Any, ...]] = {}
    for item in _recorded or ():
        first.setdefault(item[0], item)  # a file read twice: as it was first read
    _recorded = None
    return [first[p] for p in sorted(first)]


def signatures(paths: Iterable[str]) -> list[tuple[Any, ...]]:
    """``(path, mtime_ns, size)`` of each file now, ``(path,)`` for one that is missing."""
    out: list[tuple[Any, ...]] = []
    for path in sorted(set(paths)):
        try:
            st = os.stat(path)
        except OSError:
            out.append((path,))
        else:
            out.append((path, st.st_mtime_ns, st.st_size))
    return out
