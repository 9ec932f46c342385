"""A Python sensor's try inside the task process (issue 15).

Reschedule mode: one poke per try's turn; a falsy value ends the turn with the outcome
``{"sensor": "reschedule"}`` and the worker records it (``store.record_poke``): the
instance waits in the store for its next poke, holding no slot. Poke mode: the try
loops here, sleeping ``poke_interval`` (with its backoff) between pokes, until the
function returns something truthy or the sensor's timeout passes
(``{"sensor": "timeout"}``). Each poke is a line in the try's log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from orchestrator.authoring.sensor import poke_result
from orchestrator.scheduling.sensors import SensorPolicy


class SensorWait:
    """A sensor's try ended without its condition met: the outcome to send."""

    def __init__(self, outcome: dict[str, Any]) -> None:
        self.outcome = outcome


def run_sensor(
    call: Callable[[], Any], options: dict[str, Any], pokes_before: int, logger: logging.Logger
) -> Any:
    """Poke through ``call``; the result to send downstream, or a :class:`SensorWait`."""
    policy = SensorPolicy.of(options)
    number = pokes_before + 1
    if policy.mode == "reschedule":
        done, result = poke_result(call())
        if done:
            logger.info("poke %d: condition met", number)
            return result
        wait = policy.interval_after(number)
        logger.info("poke %d: condition not met; rescheduled (next poke in %s)", number, wait)
        return SensorWait({"ok": False, "sensor": "reschedule", "error": "not yet"})
    started = time.monotonic()
    limit = policy.timeout.total_seconds()
    while True:
        done, result = poke_result(call())
        if done:
            logger.info("poke %d: condition met", number)
            return result
        elapsed = time.monotonic() - started
        if elapsed >= limit:
            message = (
                f"sensor timed out: its condition was not met in "
                f"{timedelta(seconds=round(elapsed))} ({number} pokes; timeout {policy.timeout})"
            )
            logger.error("poke %d: condition not met; %s", number, message)
            return SensorWait({"ok": False, "sensor": "timeout", "error": message})
        wait = min(policy.interval_after(number).total_seconds(), limit - elapsed)
        logger.info("poke %d: condition not met; poking again in %.0fs", number, wait)
        for h in logger.handlers:
            h.flush()
        time.sleep(wait)  # poke mode holds its slot by design: the try is the wait
        number += 1
