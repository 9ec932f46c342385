"""A stored error, the user's code first: a Python traceback trimmed to the user's frames.

Pure: the error text a try stored in, what the task page shows out. A try's error is
``"ValueError: boom"`` and then the traceback as ``traceback.format_exception`` wrote
it, whose first frames are the orchestrator's own (``orchestrator/engine/runner.py``
calling the task). The page shows the exception line, then the frames of the user's
code, innermost (where it raised) first; the whole text stays behind a "show full
traceback" toggle. Nothing stored changes: this only reads the text.

>>> text = '''ValueError: boom
... Traceback (most recent call last):
...   File "/usr/lib/orchestrator/engine/runner.py", line 420, in run_try
...     result = invoke(fn, ctx)
...   File "/srv/dags/etl.py", line 12, in load
...     raise ValueError("boom")
... ValueError: boom'''
>>> shown = trim(text)
>>> shown.exception, [(f.path, f.line) for f in shown.frames], shown.hidden
('ValueError: boom', [('/srv/dags/etl.py', 12)], 1)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import orchestrator

# The orchestrator's own modules: a frame in one of them (``.../orchestrator/engine/...``,
# ``.../orchestrator/sensors.py``, the installed ``orchestrator/webui``) is not the user's.
# Named from this checkout's package, so a new module counts without a change here; a
# worker elsewhere has another prefix but the same names after ``orchestrator/``.
# (found through the import system: a checkout has webui/ beside orchestrator/, a wheel
# puts it inside, as orchestrator/webui)
_PACKAGE = Path(orchestrator.__file__).resolve().parent
_OWN_NAMES = sorted(
    {p.stem for p in _PACKAGE.glob("*.py")}
    | {p.name for p in _PACKAGE.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    | {"webui", "_migrations"}
)
_OWN = re.compile(
    r"(?:^|[/\\])orchestrator[/\\](?:" + "|".join(map(re.escape, _OWN_NAMES)) + r")(?:[/\\]|\.py$)"
)
_FRAME = re.compile(r'^ {2}File "(?P<path>[^"\n]*)", line (?P<line>\d+)(?:, in (?P<func>.*))?$')
_HEADER = "Traceback (most recent call last):"
# the lines that join chained exceptions (``raise ... from``, an error while handling one)
_CHAINS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback: where, and the source lines shown under it."""

    path: str
    line: int
    function: str
    code: tuple[str, ...]  # the source line and its ``^^^`` markers, as printed

    @property
    def own(self) -> bool:
        """True for a frame of the orchestrator's own code (not the user's)."""
        return is_own_path(self.path)


@dataclass(frozen=True)
class ShownError:
    """An error as the task page shows it (see :func:`trim`).

    >>> trim("timed out after 0:00:05 and was killed").has_traceback
    False
    """

    exception: str  # the last line: ``ValueError: boom`` (the whole text if no traceback)
    frames: tuple[Frame, ...]  # the user's frames, innermost first
    hidden: int  # how many frames only the full traceback shows
    full: str  # the stored text, whole

    @property
    def has_traceback(self) -> bool:
        return bool(self.frames) or self.hidden > 0


def is_own_path(path: str) -> bool:
    """Whether ``path`` is a file of the orchestrator's own package (anywhere installed).

    >>> is_own_path("/opt/venv/lib/python3.12/site-packages/orchestrator/engine/runner.py")
    True
    >>> is_own_path("/srv/orchestrator/dags/etl.py")
    False
    """
    return bool(_OWN.search(path))


def parse_frames(text: str) -> tuple[list[Frame], str]:
    """The frames of the last traceback in ``text`` (the exception that ended the try,
    after any chained ones) and its exception line; ``([], "")`` without a traceback."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.strip() == _HEADER:
            start = i
    if start is None:
        return [], ""
    frames: list[Frame] = []
    exception = ""
    i = start + 1
    while i < len(lines):
        m = _FRAME.match(lines[i])
        if m is not None:
            code = []
            i += 1
            while i < len(lines) and lines[i].startswith("    ") and not _FRAME.match(lines[i]):
                code.append(lines[i][4:])
                i += 1
            frames.append(Frame(m["path"], int(m["line"]), m["func"] or "", tuple(code)))
            continue
        if lines[i].startswith("  ") and frames:  # "  [Previous line repeated 996 more times]"
            i += 1
            continue
        exception = "\n".join(x for x in lines[i:] if x.strip() not in _CHAINS).strip()
        break
    return frames, exception


def trim(text: str | None) -> ShownError:
    """``text`` (a try's stored error) with the user's frames first: the exception line,
    the frames outside the orchestrator's package (innermost first) and the count of the
    others. An error without a traceback is shown as it is, with no frame."""
    full = text or ""
    frames, exception = parse_frames(full)
    if not frames:
        return ShownError(exception=full.strip(), frames=(), hidden=0, full=full)
    user = [f for f in frames if not f.own]
    if not user:  # the orchestrator's own error (a bad DAG file, a lost lease): all shown
        user = frames
    return ShownError(
        exception=exception or full.splitlines()[0],
        frames=tuple(reversed(user)),
        hidden=len(frames) - len(user),
        full=full,
    )
