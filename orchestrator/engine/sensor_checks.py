"""The built-in sensors' checks, evaluated by the worker itself (issue 15).

A built-in sensor (``orchestrator.sensors``: file, time, external, trigger) is stored
as a declarative check (``TaskSpec.check``). The worker that claims it evaluates the
check in its own process, in a few milliseconds, and records the outcome like any
try's: met (success, its result downstream), not yet (``store.record_poke``: the
instance waits in the store until its next poke, holding no slot), or gave up
(``store.sensor_failed``). No task process is used, and no task is ever given the
database's address: the worker reads the store it already holds.

>>> outcome = evaluate(store, claim, spec, task, now, log_file="...")   # doctest: +SKIP
>>> outcome.state                                                         # doctest: +SKIP
'reschedule'
"""

from __future__ import annotations

import functools
import glob
import json
import os
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from orchestrator.authoring.context import TaskContext
from orchestrator.authoring.http_request import render_json
from orchestrator.authoring.spec import DagSpec, TaskSpec
from orchestrator.engine.tasklog import CappedLog
from orchestrator.engine.xcom_lookup import pull_asker
from orchestrator.store import Store
from orchestrator.store.assets.cross_dag import TriggerDepthError, triggered_run_id
from orchestrator.store.core.records import Claim
from orchestrator.store.tasks.task_store import idempotency_key

# the worker's outbox states of a sensor's outcome besides success and failure
RESCHEDULE = "reschedule"  # not yet: payload is the earliest next poke (or None)
GAVE_UP = "sensor_failed"  # timed out in poke mode, or the condition can never hold
SENSOR_OUTCOMES = (RESCHEDULE, GAVE_UP)
_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
MAX_LISTED = 100  # matched files named in a file sensor's result


@dataclass(frozen=True)
class Outcome:
    state: str  # "success" | RESCHEDULE | GAVE_UP | "failed"
    payload: Any = None  # the result JSON, the next poke's time, or the error
    line: str = ""  # the poke's line in the try's log


def evaluate(
    store: Store,
    claim: Claim,
    spec: DagSpec,
    task: TaskSpec,
    now: datetime,
    *,
    log_file: str,
    max_log_bytes: int,
) -> Outcome:
    """Evaluate ``task``'s check once; its outcome, also written to the try's log."""
    check = task.check or {}
    try:
        outcome = _CHECKS[check["type"]](store, claim, spec, check, now)
    except Exception as exc:  # noqa: BLE001 - an ordinary failed try (spends a retry)
        outcome = Outcome("failed", f"{type(exc).__name__}: {exc}", f"failed: {exc}")
    number = claim.poke_count + 1
    log = CappedLog(log_file, max_log_bytes or 1 << 62)
    try:
        if claim.poke_count == 0:
            log.write(
                f"{_stamp(now)} INFO starting dag_id={claim.dag_id} run_id={claim.run_id} "
                f"task_id={claim.task_id} try={claim.try_number} ({check.get('type')} sensor, "
                "evaluated by the worker)\n"
            )
        log.write(f"{_stamp(now)} INFO poke {number}: {outcome.line}\n")
    finally:
        log.close()
    return outcome


@functools.lru_cache(maxsize=4096)
def _template(source: str) -> Any:
    """A file sensor's path template, compiled once (a poke comes every poke_interval)."""
    return _ENV.from_string(source)


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%d %H:%M:%S,") + f"{now.microsecond // 1000:03d}"


def _context(claim: Claim, spec: DagSpec, store: Store) -> TaskContext:
    params = {**spec.params, **claim.conf}
    return TaskContext(
        dag_id=claim.dag_id,
        run_id=claim.run_id,
        task_id=claim.task_id,
        logical_date=claim.logical_date,
        data_interval_start=claim.data_interval_start,
        data_interval_end=claim.data_interval_end,
        try_number=claim.try_number,
        params=params,
        idempotency_key=idempotency_key(claim.dag_id, claim.run_id, claim.task_id),
        log=None,  # type: ignore[arg-type]
        upstream_ids=(),
        _results={},
        timezone=spec.timezone,
        conf=claim.conf,
        run_type=claim.run_type,
        ask=pull_asker(store, claim.ti_id),  # {{ ti.xcom_pull(...) }} in its arguments
    )


def _file(store: Store, claim: Claim, spec: DagSpec, check: dict, now: datetime) -> Outcome:
    variables = _context(claim, spec, store).template_vars(spec.timezone)
    pattern = _template(check["filepath"]).render(variables)
    if not os.path.isabs(pattern):
        pattern = os.path.join(os.path.dirname(spec.fileloc), pattern)
    min_size, min_age = check.get("min_size") or 0, check.get("min_age") or 0
    found, too_small, too_new = [], 0, 0
    for path in sorted(glob.glob(pattern, recursive=bool(check.get("recursive")))):
        try:
            st = os.stat(path)
        except OSError:
            continue  # gone between the listing and now
        if not os.path.isfile(path):
            continue
        if st.st_size < min_size:
            too_small += 1
        elif min_age and now.timestamp() - st.st_mtime < min_age:  # no min_age: any mtime
            too_new += 1
        else:
            found.append(path)
    if found:
        line = f"condition met: {len(found)} file(s) match {pattern}"
        return Outcome("success", json.dumps(found[:MAX_LISTED]), line)
    why = f"no file matches {pattern}"
    if too_small or too_new:
        why += f" ({too_small} smaller than {min_size} bytes, {too_new} younger than {min_age}s)"
    return Outcome(RESCHEDULE, None, f"condition not met: {why}; rescheduled")


def time_target(check: dict, claim: Claim, timezone: str) -> datetime:
    """When a time sensor's condition holds: ``target_time`` on the day the data
    interval ends (in the DAG's timezone), or the data interval's end + ``delta``."""
    if check.get("delta") is not None:
        return claim.data_interval_end + timedelta(seconds=check["delta"])
    zone = ZoneInfo(timezone)
    day = claim.data_interval_end.astimezone(zone).date()
    wall = datetime.combine(day, time.fromisoformat(check["target_time"]), tzinfo=zone)
    return wall.astimezone(claim.data_interval_end.tzinfo)


def _time(store: Store, claim: Claim, spec: DagSpec, check: dict, now: datetime) -> Outcome:
    target = time_target(check, claim, spec.timezone)
    if now >= target:
        return Outcome("success", json.dumps(target.isoformat()), f"{target.isoformat()} reached")
    return Outcome(RESCHEDULE, target, f"waiting until {target.isoformat()}; rescheduled")


def _external(store: Store, claim: Claim, spec: DagSpec, check: dict, now: datetime) -> Outcome:
    when = claim.logical_date - timedelta(seconds=check.get("execution_delta") or 0)
    dag_id, task_id = check["external_dag_id"], check.get("external_task_id")
    what = f"{dag_id}.{task_id}" if task_id else f"DAG {dag_id}"
    found = store.external_state(dag_id, when, task_id)
    if found is None:
        return Outcome(
            RESCHEDULE, None, f"{what} has no run at {when.isoformat()} yet; rescheduled"
        )
    run_id, state = found
    if state == "missing":
        return Outcome(GAVE_UP, f"run {run_id} of DAG {dag_id} has no task {task_id!r}",
                       f"run {run_id} has no task {task_id!r}")  # fmt: skip
    result = json.dumps({"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "state": state})
    if state in check["allowed_states"]:
        return Outcome("success", result, f"{what} is {state} in {run_id}: condition met")
    if state in check["failed_states"]:
        error = f"{what} is {state} in {run_id} (one of failed_states {check['failed_states']})"
        return Outcome(GAVE_UP, error, error)
    return Outcome(RESCHEDULE, None, f"{what} is {state} in {run_id}; rescheduled")


def _trigger(store: Store, claim: Claim, spec: DagSpec, check: dict, now: datetime) -> Outcome:
    target = check["trigger_dag_id"]
    # issue 25: the conf's strings are templates ("{{ ds }}" keeps its JSON type alone)
    conf = render_json(
        check.get("conf") or {},
        _context(claim, spec, store).template_vars(spec.timezone),
        native=bool(check.get("native")),
    )
    run_id = triggered_run_id(target, claim.logical_date, claim.dag_id, claim.run_id,
                              claim.task_id)  # fmt: skip
    try:
        run, created = store.trigger_dag_once(
            target,
            run_id,
            now,
            logical_date=claim.logical_date,
            conf=conf,
            triggered_by=f"task:{idempotency_key(claim.dag_id, claim.run_id, claim.task_id)}",
            parent_run_id=claim.run_id,
            max_depth=store.max_trigger_depth,
        )
    except TriggerDepthError as exc:  # a runaway chain: fail now, a retry would too
        return Outcome(GAVE_UP, str(exc), str(exc))
    said = f"{'created' if created else 'found'} run {run.run_id} of DAG {target}"
    # issue 26: Airflow's reset_dag_run: a try that finds its finished run runs it again
    # (on its first poke only: later pokes wait for the run it reset)
    first = check.get("reset_dag_run") and not created and claim.poke_count == 0
    if first and store.rerun_run(run.run_id, now, f"reset by {claim.dag_id}.{claim.task_id}"):
        run = store.get_run(run.run_id)
        said = f"reset run {run.run_id} of DAG {target}"
    result = json.dumps({"dag_id": target, "run_id": run.run_id})
    if not check.get("wait_for_completion"):
        return Outcome("success", result, said)
    if run.state in check["allowed_states"]:
        return Outcome("success", result, f"{said}: it is {run.state}")
    if run.state in check["failed_states"]:
        error = f"run {run.run_id} of DAG {target} is {run.state}"
        return Outcome(GAVE_UP, error, error)
    return Outcome(RESCHEDULE, None, f"{said}: it is {run.state}; rescheduled")


_CHECKS = {"file": _file, "time": _time, "external": _external, "trigger": _trigger}


def record_sensor_outcome(
    store: Store, claim: Claim, state: str, payload: Any, at: datetime
) -> str | None:
    """Record a sensor's not-yet (RESCHEDULE) or gave-up (GAVE_UP) outcome."""
    if state == RESCHEDULE:
        return store.record_poke(claim, at, wake_at=payload)
    return store.sensor_failed(claim, str(payload), at)
