"""What the DAG file being imported is building now: the DAGs open as context
managers, the open task groups, every DAG built (the loader reads and clears it) and the
files the loader is importing. Shared by the DAG, task, decorator and task-group modules
(``authoring/dag.py`` re-exports these names)."""

from __future__ import annotations

from typing import Any

_active: list[Any] = []  # the DAGs open as ``with DAG(...)``, innermost last
_created: list[Any] = []  # every DAG built; the loader reads and clears it
_loading: list[str] = []  # the DAG files the loader is importing now (dag.test() refuses)
# issue 14: the TaskGroups being built, innermost last (authoring/task_group.py pushes
# them; it imports this module, so groups are known here by their shape only)
_groups: list[Any] = []


def _current_group(dag: Any) -> Any:
    return next((g for g in reversed(_groups) if g.dag is dag), None)
