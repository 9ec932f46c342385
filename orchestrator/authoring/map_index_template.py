"""``map_index_template``: a name for each instance of a mapped task (issue 25 item 7).

What a DAG file writes (Airflow's option)::

    @task(map_index_template="{{ path }}")
    def load(path): ...

    load.expand(path=["part-1.csv", "part-2.csv"])   # instances "part-1.csv", "part-2.csv"

The template sees the instance's mapped and fixed arguments (for a task of a mapped
task group, the group's item) and is rendered when the instance is created; the UI,
the CLI and the API show the name beside the map index. Checked when the DAG file is
parsed: a name the template uses that is not an argument is an import error.
"""

from __future__ import annotations

from typing import Any

from jinja2 import TemplateError, meta

from orchestrator.authoring.templating import TEXT_ENV
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.scheduling.mapping import KWARGS

MAX_NAME = 250  # characters of a rendered name kept (Airflow's column is 250 too)


def option(task_id: str, value: Any, where: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"task {task_id!r}: map_index_template must be a non-empty string", where)
    try:
        TEXT_ENV.parse(value)
    except TemplateError as exc:
        raise _fail(f"task {task_id!r}: bad map_index_template {value!r}: {exc}", where) from None
    return value


def check_dag(dag: Any) -> None:
    """Every ``map_index_template`` names only arguments its task's instances have."""
    for task in dag.tasks.values():
        template = getattr(task, "map_index_template", None)
        if template is None:
            continue
        where = (task.fileloc, task.lineno)
        if task.mapping is None:
            raise _fail(
                f"task {task.task_id!r}: map_index_template names the instances of a mapped "
                "task, and this task is not mapped (map it with .expand(...), or drop it)",
                where,
            )
        names = {str(arg) for arg, _ in task.mapping["args"]}
        if KWARGS in names:
            continue  # expand_kwargs: the keys are known when the items are
        names |= set(task.mapping.get("partial") or {})
        used = meta.find_undeclared_variables(TEXT_ENV.parse(template))
        unknown = sorted(used - names)
        if unknown:
            raise _fail(
                f"task {task.task_id!r}: map_index_template {template!r} uses "
                f"{', '.join(map(repr, unknown))}, which is not an argument of its instances "
                f"(they have: {', '.join(sorted(names))})",
                where,
            )


def render(template: str | None, values: dict[str, Any] | None) -> str | None:
    """An instance's name, or None (no template, or it does not render for this item:
    the instance is shown by its index)."""
    if template is None or values is None:
        return None
    try:
        name = TEXT_ENV.from_string(template).render(**values).strip()
    except (TemplateError, TypeError, ValueError, ArithmeticError):
        return None
    return name[:MAX_NAME] or None
