"""Turning a claim into a try: the job a task process receives, or a built-in sensor's
check evaluated by the worker itself."""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime
from typing import Any

from orchestrator.authoring.task_controls import SHELLS
from orchestrator.engine.mapped_job import mapped_job
from orchestrator.engine.sensor_checks import (
    evaluate,
)
from orchestrator.store.core.records import Claim
from orchestrator.store.tasks.task_store import idempotency_key

log = logging.getLogger(__name__)


CHECKS_SECONDS = 600.0  # rounds keep claiming built-in sensors this long after the last


class Dispatching:
    """Starting ``Worker``'s claims: a job to a free task process, a check here."""

    def _dispatch(self, claim: Claim, now: datetime) -> None:
        try:
            spec = self.store.spec(claim.dag_id, claim.version_hash)
            task = spec.tasks[claim.task_id]
            # issue 15: the events that started an asset-triggered run (ctx)
            triggering = (
                self.store.triggering_asset_events(claim.run_id)
                if "__asset_triggered__" in claim.run_id
                else []
            )
            mapped = mapped_job(spec, task, claim)  # engine/mapped_job.py (issue 14)
            user = self._user_for(task.run_as_user)  # issue 24: who its process runs as
        except Exception as exc:  # noqa: BLE001
            self.store.finish_failure(claim, f"cannot prepare the try: {exc}", None, now)
            return
        if task.check is not None:  # a built-in sensor: the worker checks (issue 15)
            self._check(claim, spec, task, now)
            return
        if len(self._busy) >= self.concurrency:  # claimed ahead (worker_prefetch)
            self._backlog.append((claim, time.monotonic()))
            return
        params = dict(spec.params)
        params.update(claim.conf)
        job = mapped | {
            "dag_id": claim.dag_id,
            "run_id": claim.run_id,
            "task_id": claim.task_id,
            "try_number": claim.try_number,
            "logical_date": claim.logical_date.isoformat(),
            "data_interval_start": claim.data_interval_start.isoformat(),
            "data_interval_end": claim.data_interval_end.isoformat(),
            "params": params,
            "conf": claim.conf,  # {{ dag_run.conf }} (issue 25)
            "run_type": claim.run_type,  # {{ dag_run.run_type }} (issue 26)
            "idempotency_key": idempotency_key(
                claim.dag_id, claim.run_id, claim.task_id, claim.map_index
            ),
            "upstream": list(task.upstream),
            "results": mapped["results"],
            "kind": task.kind,
            "command": task.command,
            "http": task.http,
            "env": task.env,
            "user_templates": task.user_templates,  # rendered with the DAG file (issue 25)
            "timezone": spec.timezone,
            "fileloc": spec.fileloc,
            "cwd": task.cwd or os.path.dirname(spec.fileloc),
            "output_last_line": task.output_last_line,  # issue 26: BashOperator's result
            "shell": SHELLS[task.bash],  # issue 26: bash for BashOperator
            "log_file": os.path.join(self.settings.log_dir, claim.log_path),
            "max_result_bytes": self.settings.max_result_bytes,
            "max_log_bytes": self.settings.max_log_bytes,
            "venv_cache_dir": self.settings.venv_cache_dir,  # @task.virtualenv (issue 16)
            "venv_installer": self.settings.venv_installer,
            "tag": (claim.ti_id, claim.try_number),
            # issue 15: the task's outlets, and the events that triggered an asset run
            "outlets": list(task.outlets),
            "triggering_asset_events": triggering,
            # issue 14: hooks run in the task process; a shell exit status that skips
            "hooks": [h for h in task.callbacks if h in ("on_execute", "on_success")],
            "skip_on_exit_code": task.skip_on_exit_code,
            "sensor": task.sensor,
            "poke_count": claim.poke_count,
            # issue 30: a deferred try resumed by its trigger (engine/deferral_try.py)
            "next_method": claim.next_method,
            "next_kwargs": claim.next_kwargs,
        }
        slot = self._free_slot(user)
        slot.claim = claim
        slot.confirmed = slot.started = time.monotonic()
        timeout = task.timeout.total_seconds() if task.timeout else None
        slot.deadline = time.monotonic() + timeout if timeout else None
        slot.timeout = timeout
        try:
            self._send_job(slot, job)
        except (BrokenPipeError, OSError):
            slot.kill()
            slot = self._spawn(user)
            slot.claim = claim
            slot.confirmed = slot.started = time.monotonic()
            slot.deadline = time.monotonic() + timeout if timeout else None
            slot.timeout = timeout
            self._send_job(slot, job)
        self._busy.append(slot)
        self._logs.start(claim.ti_id, claim.try_number, job["log_file"])
        log.info(
            "started dag_id=%s run_id=%s task_id=%s try=%s",
            claim.dag_id,
            claim.run_id,
            claim.task_id,
            claim.try_number,
        )

    def _check(self, claim: Claim, spec: Any, task: Any, now: datetime) -> None:
        """Evaluate a built-in sensor's check here (engine/sensor_checks.py): no slot."""
        log_file = os.path.join(self.settings.log_dir, claim.log_path)
        out = evaluate(self.store, claim, spec, task, now, log_file=log_file,
                       max_log_bytes=self.settings.max_log_bytes)  # fmt: skip
        ok = out.state == "success"
        # for a while, every round claims due built-in sensors too (store.finish_round)
        self._checks = time.monotonic() + CHECKS_SECONDS
        self._outbox.append((claim, ok, out.payload, 0 if ok else None, out.state, now))
