"""Where in a DAG file a definition error is: the first stack frame outside this package.

>>> raise definition_error("task 'x': bad option", caller())     # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys

from orchestrator.errors import DagDefinitionError

Where = tuple[str | None, int | None]
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# orchestrator.airflow's adapters (issue 26) call the authoring API for the DAG file too
SKIPPED_DIRS = (
    PACKAGE_DIR + os.sep,
    os.path.join(os.path.dirname(PACKAGE_DIR), "airflow") + os.sep,
)


def caller() -> Where:
    """File and line of the first stack frame outside the authoring package and
    ``orchestrator.airflow`` (the DAG file)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(SKIPPED_DIRS) and not filename.startswith("<frozen"):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None, None


def definition_error(message: str, where: Where | None = None) -> DagDefinitionError:
    """The error for ``message`` at ``where`` (default: the caller in the DAG file)."""
    fileloc, lineno = where if where is not None else caller()
    return DagDefinitionError(message, fileloc=fileloc, lineno=lineno)
