"""A worker round: collect the tries that finished, and record their outcomes, release
their downstream tasks and claim the next ones in as few commits as correctness allows."""

from __future__ import annotations

import logging
import time
from datetime import datetime
from multiprocessing.connection import wait
from typing import Any

from orchestrator.engine.deferral_try import DEFERRED_TRY
from orchestrator.engine.secrets_chain import answer_lookup
from orchestrator.engine.sensor_checks import (
    RESCHEDULE,
    SENSOR_OUTCOMES,
    record_sensor_outcome,
)
from orchestrator.engine.task_hooks import try_state_of
from orchestrator.engine.task_processes import describe_exit, outcome_of, protocol_error
from orchestrator.engine.worker_prefetch import PREFETCH_SHORT_SECONDS
from orchestrator.engine.xcom_lookup import answer_results
from orchestrator.errors import OrchestratorError
from orchestrator.store.core.records import Claim
from orchestrator.store.credentials.secret_box import box_of

log = logging.getLogger(__name__)


# a round waits up to GATHER_SECONDS for tries started in the last GATHER_RECENT seconds
GATHER_SECONDS = 0.002
GATHER_RECENT = 0.05
_NOTHING = object()  # no message: the channel is closed (the task process died)


class Rounds:
    """Collecting finished tries and recording them (``Worker``'s outbox)."""

    def _answer_results(self, message: tuple) -> dict[str, Any]:
        return answer_results(
            self.store, self.settings.max_result_bytes, message, self._set_variable
        )

    def _set_variable(self, key: str, value: str, is_json: bool, description: Any) -> None:
        """A try's ``Variable.set`` (issue 26): stored encrypted as every variable. A
        secret variable (an operator's credential) is never replaced from a try."""
        existing = self.store.get_variable(key, None)
        if existing is not None and existing.is_secret:
            raise OrchestratorError(
                f"Variable.set {key!r}: it is a secret variable, which a task cannot replace "
                "(set it with 'orchestrator variables set' or the UI)"
            )
        self.store.set_variable(
            key, value, self.clock.now(), box_of(self.settings), is_json=is_json,
            description=description if isinstance(description, str) else None,
        )  # fmt: skip

    def _collect(self, now: datetime, wait_seconds: float, extra: Any = ()) -> int:
        if not self._busy:
            return 0
        ready = wait(
            [s.conn for s in self._busy] + [s.process.sentinel for s in self._busy] + list(extra),
            wait_seconds,
        )
        if not ready:
            return 0
        if wait_seconds:
            ready += self._gather(ready)
        done = 0
        now = self.clock.now() if wait_seconds else now
        for slot in list(self._busy):
            if slot.conn not in ready and slot.process.sentinel not in ready:
                continue
            claim = slot.claim
            assert claim is not None
            outcome: dict[str, Any] | None = None
            message: Any = _NOTHING
            try:
                if slot.conn.poll():
                    message = slot.conn.recv()
            except (EOFError, OSError):
                message = _NOTHING
            except Exception as exc:  # noqa: BLE001 - garbage on the channel
                message = exc
            tag = (claim.ti_id, claim.try_number)
            if answer_lookup(self._secrets, slot.conn, message, tag, self._answer_results):
                continue  # the try asked for a variable or connection: it runs on
            self._busy.remove(slot)
            if message is not _NOTHING:
                outcome = outcome_of(message, (claim.ti_id, claim.try_number), slot.process.pid)
                if outcome is None:
                    slot.kill()
                    error = protocol_error(message, slot.process.pid)
                    log.error(
                        "dag_id=%s run_id=%s task_id=%s try=%s: %s",
                        claim.dag_id,
                        claim.run_id,
                        claim.task_id,
                        claim.try_number,
                        error,
                    )
                    self._outbox.append((claim, False, error, None, "crashed", now))
                    done += 1
                    continue
            if outcome is None:
                slot.process.join(1)
                code = slot.process.exitcode
                slot.kill()
                reason = describe_exit(code)
                self._outbox.append(
                    (claim, False, f"the task process died: {reason}", code, "crashed", now)
                )
            else:
                # tries this short: claim ahead of the free processes (worker_prefetch)
                self._short = time.monotonic() - slot.started < PREFETCH_SHORT_SECONDS
                slot.claim, slot.deadline = None, None
                self._idle.append(slot)
                if outcome["ok"]:
                    if outcome.get("outlet_events"):  # issue 15
                        self._outlet_extras[(claim.ti_id, claim.try_number)] = outcome[
                            "outlet_events"
                        ]
                    self._outbox.append((claim, True, outcome.get("result"), 0, "success", now))
                elif outcome.get("defer"):  # issue 30: ctx.defer (store.defer_task)
                    self._outbox.append((claim, False, outcome["defer"], None, DEFERRED_TRY, now))
                elif outcome.get("sensor"):  # a sensor not met yet, or timed out (issue 15)
                    if outcome["sensor"] == "reschedule":  # payload: no earlier next poke
                        self._outbox.append((claim, False, None, None, "reschedule", now))
                    else:
                        error = outcome.get("error")
                        self._outbox.append((claim, False, error, None, "sensor_failed", now))
                else:
                    error, status = outcome["error"], outcome.get("exit_status")
                    # "failed", or a Skip / Fail the task chose (engine/task_hooks.py)
                    self._outbox.append((claim, False, error, status, try_state_of(outcome), now))
            done += 1
        self._start_backlog()  # the freed processes go on while this round is recorded
        self._flush()
        return done

    def _gather(self, ready: list[Any]) -> list[Any]:
        """Once one child has finished, give the others started with it a moment
        (``GATHER_SECONDS``) to finish too, so a burst of short tries is recorded in one
        round (one transaction) instead of in a round each. Only tries started in the
        last ``GATHER_RECENT`` seconds are waited for: a long task never delays a round,
        and a lone try (a chain) is not waited for at all."""
        mono = time.monotonic()
        waiting = [
            s.conn
            for s in self._busy
            if s.conn not in ready
            and s.process.sentinel not in ready
            and mono - s.started < GATHER_RECENT
        ]
        gathered: list[Any] = []
        end = mono + GATHER_SECONDS
        while waiting:
            got = wait(waiting, max(0.0, end - time.monotonic()))
            if not got:
                break
            gathered += got
            waiting = [c for c in waiting if c not in got]
        return gathered

    def _flush(self) -> int:
        """Record finished tries, oldest first. If the database is unreachable, keep them
        and try again next tick: an outcome is never dropped because of an outage.

        Consecutive successes are recorded in one transaction, which also queues the
        downstream tasks they unblock (``store.finish_successes``) and, for the last
        batch when slots are free, claims what is ready in the same transaction
        (``store.finish_and_claim``): one commit per round. The scheduler is woken only
        when something is left that it alone decides (a failure, another trigger rule,
        a finished run), so it does not tick once per task.
        """
        pieces: list | None = None  # the ends of ended tries' logs, for the first commit
        if self._logs.ended(live := self._live()):
            if self._outbox and self._outbox[0][1]:  # a success first: its commit carries them
                pieces = self._logs.prepare(live, ended_only=True)
            else:
                self._logs.ship(self.clock.now(), live, ended_only=True)
        recorded = 0
        wake_scheduler = False
        claimed: tuple[list[Claim], datetime] | None = None  # and when they were claimed
        while self._outbox:
            claim, ok, payload, exit_status, try_state, at = self._outbox[0]
            try:
                if ok or try_state == RESCHEDULE:
                    # the leading successes and (issue 15) unmet pokes, in one commit
                    batch, pokes, n = [], [], 0
                    for item in self._outbox:
                        if not (item[1] or item[4] == RESCHEDULE):
                            break
                        if len(batch) >= 64 if item[1] else len(pokes) >= 128:
                            break
                        if item[1]:
                            batch.append((item[0], item[2], item[5]))
                        else:
                            pokes.append((item[0], item[5], item[2]))
                        n += 1
                    free = self._free_slots()
                    take = None
                    if n == len(self._outbox) and free > 0:
                        take = (self.id, self.clock.now(), self.lease, free, list(self.queues))
                    extras = self._outlet_extras or None  # issue 15: outlet events' extras
                    if pokes or (take is not None and self._checks > time.monotonic()):
                        # also claims due built-in sensors beyond the free slots
                        states, done, claims = self.store.finish_round(
                            pokes, batch, take, log_pieces=pieces or (), extras=extras
                        )
                        # a poke leaves nothing to the scheduler; a timed-out sensor does
                        wake_scheduler = wake_scheduler or any(
                            st != "up_for_reschedule" for st in states
                        )
                    elif take is not None:
                        done, claims = self.store.finish_and_claim(
                            batch, self.id, take[1], self.lease, limit=free,
                            queues=self.queues, log_pieces=pieces or (), extras=extras,
                        )  # fmt: skip
                    else:
                        done = self.store.finish_successes(batch, extras, log_pieces=pieces or ())
                    if pieces is not None:
                        self._logs.committed()
                        pieces = None
                    if take is not None:
                        claimed = (claims, take[1])
                        self._last_claim = time.monotonic()
                        # a full batch may leave more behind; a short one: nothing else
                        # (built-in sensors' pokes come on top of the free slots)
                        self._claim_hint = len(claims) >= free
                    wake_scheduler = wake_scheduler or any(
                        f.needs_scheduler or not f.recorded for f in done
                    )
                    self.released += sum(f.released for f in done)
                    for c, _, _ in batch:
                        self._outlet_extras.pop((c.ti_id, c.try_number), None)
                    del self._outbox[:n]
                    recorded += n
                    continue
                if try_state == DEFERRED_TRY:  # issue 30: waits for its trigger
                    self.store.defer_task(claim, payload, at)
                elif try_state in SENSOR_OUTCOMES:  # a sensor that gave up
                    record_sensor_outcome(self.store, claim, try_state, payload, at)
                else:
                    self.store.finish_failure(claim, payload, exit_status, at, try_state=try_state)
            except Exception as exc:  # noqa: BLE001 - database down: retry next tick
                log.warning(
                    "cannot record %d finished tr%s yet (%s); will retry",
                    len(self._outbox),
                    "y" if len(self._outbox) == 1 else "ies",
                    str(exc).splitlines()[0],
                )
                break
            wake_scheduler = True
            self._outbox.pop(0)
            recorded += 1
        if recorded:
            if claimed is None:  # retries and released downstream tasks may be claimable
                self._claim_hint = True
            if wake_scheduler and self.on_finish is not None:
                self.on_finish.set()
        if claimed is not None:
            for c in claimed[0]:
                self._dispatch(c, claimed[1])
        return recorded

    def _live(self) -> set[tuple[int, int]]:
        return {(s.claim.ti_id, s.claim.try_number) for s in self._busy if s.claim}

    def _ship_logs(self) -> None:
        """Ship what the running tries' logs gained since the last time (``logship.py``)."""
        self._last_ship = time.monotonic()
        self._logs.ship(self.clock.now(), self._live())
