"""What a mapped task instance's try needs beyond an unmapped one's (issue 14).

The worker adds these to the job it sends a task process: the instance's
``map_index``, its arguments (the task's ``partial`` ones, then its mapped ones), and
the upstream results (without the lists it is mapped over: its item is its
argument, and 10,000 copies of a 10,000-item list would dominate the run) with an empty list for an upstream mapped task that produced no
instance (an empty map), so ``ctx.upstream("load")`` is always a list for a mapped
``load``.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.scheduling.mapping import MapError, group_of, task_sources


def only_keys(raw: str, keys: list[str]) -> str:
    """An upstream's JSON result cut to ``keys`` when it is an object holding them all
    (the try reads only those: ``summary["total"]``); otherwise as it is, so a missing
    key's error lists the result's real keys."""
    value = json.loads(raw)
    if not isinstance(value, dict) or not all(k in value for k in keys):
        return raw
    return json.dumps({k: value[k] for k in keys})


def mapped_job(spec: Any, task: Any, claim: Any) -> dict[str, Any]:
    """``map_index``, ``map_kwargs`` and ``results`` for the job of ``claim``; MapError
    for an instance whose item could not be mapped."""
    results = dict(claim.upstream_results or {})
    for up, keys in (getattr(task, "result_keys", None) or {}).items():  # issue 25
        if up in results:
            results[up] = only_keys(results[up], keys)
    same = spec.same_instance_upstream(task.task_id) if claim.map_index >= 0 else ()
    for up in task.upstream:
        if up in spec.mapped_tasks and up not in results and up not in same:
            results[up] = "[]"
    kwargs: dict[str, Any] | None = None
    over: tuple[str, ...] = ()
    if task.mapping is not None:
        if claim.map_index >= 0 and claim.map_kwargs is None:
            # an expand_kwargs item that was not an object (store/tasks/expansion.py),
            # cleared: it fails again, never runs with the fixed arguments alone
            raise MapError(
                f"mapped task {task.task_id!r}: instance {claim.map_index} has no arguments "
                "(its expand_kwargs item was not an object with string keys)"
            )
        kwargs = dict(task.mapping.get("partial") or {})
        kwargs.update(json.loads(claim.map_kwargs or "{}"))
        # its item is its argument: the whole list is not copied to every instance
        over = task_sources(task.mapping)
        for source in over:
            results.pop(source, None)
    item = None
    if group_of(task.mapping) is not None:
        # issue 25 item 7: a task of a mapped group gets its group instance's item for
        # the group's arguments; only a shell task's template variables are the item
        item = kwargs
        if task.kind != "shell":
            kwargs = None
    return {
        "map_index": claim.map_index,
        "map_kwargs": kwargs,
        "results": results,
        "mapped_over": list(over),
        **({"group_item": item, "same_instance": sorted(same)} if item is not None else {}),
    }
