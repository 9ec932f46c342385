"""What each page shows, gathered once for both the HTML pages and the JSON API.

Functions take the store, the request's arguments and ``now``; they return plain
dicts of records, so a page and its API route can never disagree.

>>> schedule_preview(store.current_spec("nightly_report"), now, 2)  # doctest: +SKIP
[datetime(2026, 1, 2, 1, 0, tzinfo=UTC), datetime(2026, 1, 3, 1, 0, tzinfo=UTC)]
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from orchestrator.authoring.context import TaskContext
from orchestrator.authoring.http_request import Request, loggable_url, render_request
from orchestrator.authoring.spec import DagSpec
from orchestrator.authoring.templating import render_command, render_env
from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.scheduling.explain import Reason, explain_task
from orchestrator.scheduling.retry import RetryPolicy
from orchestrator.store import Store
from orchestrator.store.core.records import RunRecord
from orchestrator.store.reads.dag_pages import Cell
from orchestrator.store.tasks.task_store import idempotency_key

from . import grid_view, task_groups
from .cron_words import schedule_in_words
from .gantt import Gantt, gantt
from .grid_view import GridQuery
from .layouts import Layouts
from .mapped import add_mapped_cells, merge_lines, merge_states, merge_tries
from .try_view import exit_reasons

GRID_RUNS = 25
GRID_CELLS = 20_000  # a wide DAG's grid shows fewer runs, never fewer tasks
HISTORY_PAGE = 25
RUN_COUNT_UP_TO = 10_000  # the run history counts this far, then says "10000+"
PREVIEW = 8
TRIES_RENDERED = 20  # the latest tries whose templates the task page renders
GANTT_INSTANCES = 50  # a mapped task's Gantt row unfolds into its first instances
VERSIONS_SHOWN = 20  # the DAG page lists the latest versions (the API lists them all)


def words(spec: DagSpec) -> str:
    s = spec.schedule
    cond = spec.asset_condition  # issue 15: an asset schedule in words
    if cond is not None:
        on = f"when assets update: {cond.describe()}"
        return (
            on
            if s.kind == "none"
            else f"{schedule_in_words(s.kind, s.expr, s.interval, s.timezone)}, or {on}"
        )
    return schedule_in_words(s.kind, s.expr, s.interval, s.timezone)


def schedule_preview(spec: DagSpec, now: datetime, count: int = PREVIEW) -> list[datetime]:
    out: list[datetime] = []
    at = now
    while len(out) < count:
        nxt = spec.schedule.next_after(at)
        if nxt is None:
            break
        out.append(nxt)
        at = nxt
    return out


def grid_runs(tasks: int, wanted: int = GRID_RUNS) -> int:
    """How many runs the grid shows for a DAG of ``tasks`` tasks: ``wanted`` (the
    page's ``runs``, GRID_RUNS by default), fewer for a DAG so wide that they would
    make more than GRID_CELLS cells (at least 1)."""
    return max(1, min(wanted, GRID_CELLS // max(tasks, 1)))


def grid(
    store: Store, dag_id: str, *, limit: int, query: GridQuery | None = None
) -> tuple[list[RunRecord], dict[tuple[str, str], Cell]]:
    """The latest ``limit`` runs (oldest first; those ``query`` filters for) and their
    cells by (run_id, task_id), a mapped task's instances summed up in one cell."""
    q = query or GridQuery()
    runs, cells, mapped = store.dag_grid(
        dag_id, limit=limit, state=q.run_state or None, run_type=q.run_type or None
    )
    add_mapped_cells(cells, mapped)
    return runs, cells


def dag_page(
    store: Store,
    layouts: Layouts,
    dag_id: str,
    now: datetime,
    *,
    run_id: str = "",
    state: str = "",
    page: int = 1,
    expand: str = "",
    query: GridQuery | None = None,
) -> dict[str, Any]:
    dag = store.get_dag(dag_id)
    spec = store.spec(dag_id, dag.version_hash)
    expanded = _expanded(expand, spec)
    query = query or GridQuery()
    columns = grid_runs(len(spec.tasks), query.runs)
    runs, cells = grid(store, dag_id, limit=columns, query=query)
    selected = next((r for r in runs if r.run_id == run_id), runs[-1] if runs else None)
    if run_id and (selected is None or selected.run_id != run_id):
        selected = store.get_run(run_id)
    states: dict[str, str] = {}
    map_counts: dict[str, dict[str, int]] = {}
    if selected is not None:
        states = merge_states(*store.run_task_states(selected.run_id))
        if spec.mapped_tasks:
            map_counts = store.mapped_counts(selected.run_id)
    page = max(page, 1)
    history, total = store.runs_page(
        dag_id, state=state or None, offset=(page - 1) * HISTORY_PAGE, limit=HISTORY_PAGE,
        count_up_to=RUN_COUNT_UP_TO,
    )  # fmt: skip
    more = total > RUN_COUNT_UP_TO  # "10000+ runs": counting them all costs O(history)
    total = min(total, RUN_COUNT_UP_TO)
    pages = max((total + HISTORY_PAGE - 1) // HISTORY_PAGE, 1)
    if more and len(history) == HISTORY_PAGE:
        pages = max(pages, page + 1)
    return {
        "dag": dag,
        "spec": spec,
        "words": words(spec),
        "grid_runs": runs,
        "cells": cells,
        "tasks": list(spec.topological_order),
        "groups": task_groups.groups_of(spec),  # the grid's task groups (issue 14)
        "grid_columns": columns,
        "grid_query": query,
        "grid_head": grid_view.header(runs, dag.timezone, now),
        "grid_bar_h": grid_view.BAR_H,
        "selected": selected,
        "states": states,
        "map_counts": map_counts,
        "graph": layouts.get(store, spec, dag_id, dag.version_hash, expanded),
        "source": store.version_source(dag_id, dag.version_hash),
        "versions": (versions := store.dag_versions(dag_id)[::-1][:VERSIONS_SHOWN]),
        "version_changes": store.changes_between(dag_id, versions),
        "history": history,
        "total": total,
        "more": more,
        "page": page,
        "pages": pages,
        "state": state,
        "preview": schedule_preview(spec, now),
    }


def run_facts(store: Store, run_id: str) -> dict[str, Any]:
    """A run, its DAG and version, its task instances (in the DAG's order) and tries:
    what the run's JSON API returns, in time linear in the number of tasks."""
    run = store.get_run(run_id)
    dag = store.get_dag(run.dag_id)
    spec = store.spec(run.dag_id, run.version_hash)
    tis = store.task_instances_without_results(run_id)
    rank = {t: i for i, t in enumerate(spec.topological_order)}
    return {
        "run": run,
        "dag": dag,
        "spec": spec,
        "tis": sorted(tis, key=lambda t: rank.get(t.task_id, 0)),
        "tries": store.run_tries(run_id),
        "states": {t.task_id: t.state for t in tis},
    }


def _expanded(raw: str, spec: Any) -> frozenset[str]:
    """The graph's open task groups from the ``expand`` query parameter (issue 27)."""
    try:
        return task_groups.expanded_of(raw, task_groups.groups_of(spec))
    except ValueError as exc:
        raise ConfigError(f"query parameter 'expand': {exc}") from None


def run_page(
    store: Store, layouts: Layouts, run_id: str, now: datetime, expand: str = ""
) -> dict[str, Any]:
    """What :func:`run_facts` reads, as much as the page shows of it (task instances
    and tries as ``store.reads.run_pages.TaskLine`` / ``TryLine`` tuples, not records),
    and what only the page draws: the graph and the Gantt chart."""
    run = store.get_run(run_id)
    dag = store.get_dag(run.dag_id)
    spec = store.spec(run.dag_id, run.version_hash)
    # a mapped task is one line, one row of the Gantt chart and one bar of its tries,
    # summed up by the database (10,000 instances are a GROUP BY, not 10,000 rows)
    lines, counts = merge_lines(*store.run_lines(run_id))
    tries = merge_tries(*store.run_try_lines(run_id))
    states = {t.task_id: t.state for t in lines}
    order = [t for t in spec.topological_order if t in states]
    rank = {t: i for i, t in enumerate(spec.topological_order)}
    tis = sorted(lines, key=lambda t: rank.get(t.task_id, 0))
    upstream = {t: spec.tasks[t].upstream for t in spec.tasks}
    return {
        "gantt": run_gantt(store, run, spec, tis, tries, order, upstream, counts, now),
        "run": run,
        "dag": dag,
        "spec": spec,
        "tis": tis,
        "tries": tries,
        "states": states,
        "map_counts": counts,
        "graph": layouts.get(store, spec, run.dag_id, run.version_hash, _expanded(expand, spec)),
        "end": run.end_date or (now if run.start_date else None),
        **run_version(store, run),
    }


def run_gantt(
    store: Store,
    run: RunRecord,
    spec: DagSpec,
    tis: list[Any],
    tries: list[Any],
    order: list[str],
    upstream: dict[str, Any],
    counts: dict[str, dict[str, int]],
    now: datetime,
) -> Gantt:
    """The run's Gantt chart: the tries' segments, back-offs by each task's retry
    policy, task groups' rows, the first GANTT_INSTANCES instances of each mapped task
    (to unfold) and deferred tries' triggers' times (read only when a task is deferred)."""
    policies: dict[str, RetryPolicy] = {}

    def backoff(task_id: str, map_index: int, failed: int) -> timedelta:
        # what store/tasks/task_store.py's _fail_attempt waited (the jitter is per key)
        policy = policies.get(task_id)
        if policy is None:
            task = spec.tasks.get(task_id)
            if task is None:
                return timedelta(0)
            policy = policies[task_id] = RetryPolicy.of(task)
        return policy.delay_after(
            failed, idempotency_key(run.dag_id, run.run_id, task_id, map_index)
        )

    since: dict[tuple[str, int], datetime] = {}
    if any(t.state == "deferred" for t in tis):
        since = {(d.task_id, d.map_index): d.since
                 for d in store.deferred_instances(run_id=run.run_id)}  # fmt: skip
    instances = store.instance_lines(run.run_id, sorted(counts), GANTT_INSTANCES)
    return gantt(
        run, tis, tries, order, upstream, now, backoff=backoff,
        groups=task_groups.groups_of(spec), instances=instances, deferred_since=since,
        timezone=spec.timezone, map_counts=counts,
    )  # fmt: skip


def run_version(store: Store, run: Any) -> dict[str, Any]:
    """The DAG version a run was created with, and that version's file (issue 17)."""
    try:
        version = store.dag_version(run.dag_id, run.version_hash)
    except OrchestratorError:  # not a stored version's hash: shown as unknown
        version = None
    return {"version": version, "source": store.version_source(run.dag_id, run.version_hash)}


def rendered_command(
    spec: DagSpec,
    run: Any,
    task_id: str,
    try_number: int,
    credentials: Any = None,
    ti: Any = None,
    store: Store | None = None,
) -> tuple[str, str]:
    """(rendered command, '') or ('', why it cannot be rendered) for a shell task;
    ``credentials`` give variables and connections, secrets as ``***``; ``ti``: its task
    instance, whose mapped arguments a mapped task's command uses."""
    task = spec.tasks[task_id]
    map_index = ti.map_index if ti is not None else -1
    kwargs: dict[str, Any] = {}
    if task.mapping is not None:
        kwargs = dict(task.mapping.get("partial") or {})
        kwargs.update(json.loads(getattr(ti, "map_kwargs", None) or "{}"))
    if task.user_templates:  # issue 25: rendering them would run the DAG file's code
        return "", (
            "its templates use the DAG's user_defined_macros or user_defined_filters, which "
            "only a task process renders (the web UI never imports DAG files): the try's "
            "log shows the command it ran"
        )
    params = dict(spec.params)
    params.update(run.conf)
    ctx = TaskContext(
        dag_id=run.dag_id,
        run_id=run.run_id,
        task_id=task_id,
        logical_date=run.logical_date,
        data_interval_start=run.data_interval_start,
        data_interval_end=run.data_interval_end,
        try_number=max(try_number, 1),
        params=params,
        idempotency_key=idempotency_key(run.dag_id, run.run_id, task_id, map_index),
        log=logging.getLogger(__name__),
        credentials=credentials,
        map_index=map_index,
        timezone=spec.timezone,
        conf=run.conf,
        ask=_pulls_only(store, ti.id) if store is not None and ti is not None else None,
    )
    try:
        if task.http is not None:
            return _request_text(render_request(task.http, ctx.template_vars(spec.timezone))), ""
        variables = ctx.template_vars(spec.timezone) | kwargs
        text = render_command(task.command or "", variables)
        if task.env:  # issue 25's env=, rendered as the try's process gets it
            env = render_env(task.env, variables)
            text += "\n\n# env\n" + "\n".join(f"{k}={v}" for k, v in env.items())
        return text, ""
    except OrchestratorError as exc:
        return "", str(exc)


def _pulls_only(store: Store, ti_id: int) -> Any:
    """What ``{{ ti.xcom_pull(...) }}`` reads when the page renders a command: the
    stored results of the instance's run (a push is refused)."""

    def ask(kind: str, request: str) -> dict[str, Any]:
        if kind != "xcom_pull":
            return {"error": "the web UI pushes nothing"}
        asked = json.loads(request)
        try:
            found = store.pull_result(
                ti_id, asked["task_id"], asked["key"], asked.get("map_indexes")
            )
        except OrchestratorError as exc:
            return {"error": str(exc)}
        return {"found": found}

    return ask


def _request_text(request: Request) -> str:
    """An HTTP task's rendered request as the page shows it: no header values."""
    lines = [f"{request.method} {loggable_url(request.url)}"]
    lines += [f"{name}: ***" for name in request.headers]
    if request.json is not None:
        lines += ["", json.dumps(request.json, indent=2)]
    elif request.data is not None:
        lines += ["", urlencode(request.data)]
    elif request.content is not None:
        lines += ["", request.content]
    return "\n".join(lines)


def task_page(
    store: Store,
    run_id: str,
    task_id: str,
    now: datetime,
    log_dir: str,
    stale: timedelta,
    map_index: int | None = None,
    mask: Any = None,
    *,
    each_try: bool = False,
) -> dict[str, Any]:
    """A task instance's page (``map_index``: which instance of a mapped task; None:
    its first); ``each_try``: render the earlier tries' templates too (the page's tabs
    show them; the JSON API, which an open page polls, does not)."""
    from .logs import view_try_log

    ti = store.task_instance(run_id, task_id, map_index)
    run = store.get_run(run_id)
    dag = store.get_dag(run.dag_id)
    spec = store.spec(run.dag_id, run.version_hash)
    task = spec.tasks.get(task_id)
    tries = store.tries(run_id, task_id, ti.map_index)
    logs = {t.try_number: view_try_log(store, log_dir, t, mask=mask) for t in tries}
    upstream = list(task.upstream) if task else []
    results = store.results(run_id, upstream)
    command, command_error = ("", "")
    rendered: dict[int, tuple[str, str]] = {}  # earlier tries' templates, as each saw them
    if task is not None and task.kind in ("shell", "http"):
        shown = _shown_credentials(store)
        command, command_error = rendered_command(
            spec, run, task_id, ti.try_number, shown, ti, store
        )
        for t in tries[-TRIES_RENDERED:] if each_try else ():  # the current try's: above
            if t.try_number != ti.try_number:
                rendered[t.try_number] = rendered_command(
                    spec, run, task_id, t.try_number, shown, ti, store
                )
        if mask is not None:
            rendered = {n: (mask(c), e) for n, (c, e) in rendered.items()}
            command = mask(command)
    reasons: list[Reason] = []
    if task is not None:
        facts = store.task_facts(
            run_id, task_id, now, worker_stale_after=stale, map_index=ti.map_index
        )
        reasons = explain_task(facts)
    deferral = None  # issue 30: a deferred instance's trigger
    if ti.state == "deferred":
        deferral = next((d for d in store.deferred_instances(run_id=run_id)
                         if d.ti_id == ti.id), None)  # fmt: skip
    return {
        "deferral": deferral,
        "ti": ti,
        "run": run,
        "dag": dag,
        "task": task,
        "tries": tries,
        "logs": logs,
        "upstream": upstream,
        "results": results,
        "result": store.result_of(run_id, task_id, ti.map_index),
        "mapped": bool(task is not None and task.mapped),
        "map_kwargs": json.loads(ti.map_kwargs) if ti.map_kwargs else None,
        "command": command,
        "command_error": command_error,
        "rendered": rendered,
        "exits": exit_reasons(tries, ti.state),
        "reasons": reasons,
        "log_dir_exists": os.path.isdir(log_dir),
    }


def _shown_credentials(store: Store) -> Any:
    """Variables and connections for a rendered command on a page: secrets as ***."""
    from orchestrator.engine.secrets_chain import SecretsChain
    from orchestrator.engine.task_secrets import display_source

    from .current import get_settings

    return display_source(SecretsChain(store, get_settings()))
