"""A worker ships its tries' log files to the store, so any machine can read them.

The task process writes a try's log file (``engine/tasklog.py``, secrets masked before
the bytes reach the file); it has no database access. The worker tails each running
try's file and appends what is new to ``log_chunks`` (``store.ship_log``): every
``log_ship_seconds`` for the running tries, and once more when a try ends, before its
outcome is recorded. A worker killed mid-try loses only what it had not shipped yet;
what it shipped stays readable after its machine is gone.

At most ``max_log_bytes`` plus ``SHIP_SLACK`` bytes of one try are shipped (room for the
truncation marker and the closing lines the log file holds past the cap); past that
the worker ships one line saying so and nothing more of that try.

>>> shipper = LogShipper(store, max_log_bytes=10 * 2**20)  # doctest: +SKIP
>>> shipper.start(claim.ti_id, claim.try_number, "/state/logs/etl/r/t/1.log")  # doctest: +SKIP
>>> shipper.ship(now, live={(claim.ti_id, claim.try_number)})  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.store.observe.log_store import LogPiece

log = logging.getLogger(__name__)

SHIP_SLACK = 64 * 1024  # bytes shipped past max_log_bytes: markers and closing lines
PIECE_BYTES = 256 * 1024  # the largest piece (one row)
WARN_EVERY = 30.0  # seconds between two warnings that shipping failed

Key = tuple[int, int]  # (task instance id, try number)


@dataclass
class _Tail:
    path: str
    shipped: int = 0  # bytes of the file shipped so far
    seq: int = 0  # the next piece's number
    capped: bool = False  # the cap's marker was shipped: nothing more


class LogShipper:
    """What a worker has shipped of each of its tries' logs, and the next pieces."""

    def __init__(self, store: Any, max_log_bytes: int) -> None:
        self.store = store
        self.limit = max_log_bytes + SHIP_SLACK
        self._tails: dict[Key, _Tail] = {}
        self._warned = float("-inf")  # monotonic time of the last warning
        self._prepared: tuple[dict[Key, tuple[int, int, bool]], set[Key]] = ({}, set())

    def start(self, ti_id: int, try_number: int, path: str) -> None:
        self._tails[(ti_id, try_number)] = _Tail(path)

    def __len__(self) -> int:
        return len(self._tails)

    def ended(self, live: Collection[Key]) -> bool:
        """True if a try this shipper follows is no longer running (``live``)."""
        return any(key not in live for key in self._tails)

    def ship(self, now: datetime, live: Collection[Key], *, ended_only: bool = False) -> int:
        """Ship what is new in the logs (only of the tries that ended, if ``ended_only``)
        in a transaction of its own; returns the bytes shipped. A try not in ``live``
        has ended: its file is complete, and once shipped the shipper forgets it. If
        the store cannot be written, nothing moves on and the next call ships it again."""
        pieces = self.prepare(live, ended_only=ended_only)
        if pieces:
            try:
                self.store.ship_log(pieces, now)
            except Exception as exc:  # noqa: BLE001 - the database may be down: next round
                if time.monotonic() - self._warned >= WARN_EVERY:  # the loop says the rest
                    self._warned = time.monotonic()
                    log.warning(
                        "cannot ship %d log piece(s) yet (%s); will retry",
                        len(pieces),
                        str(exc).splitlines()[0],
                    )
                return 0
        self.committed()
        return sum(len(p.data) for p in pieces)

    def prepare(self, live: Collection[Key], *, ended_only: bool = False) -> list[LogPiece]:
        """The next pieces to ship (see :meth:`ship`), for a transaction of the caller's:
        the worker's outcome commit carries the ends of the logs of the tries it
        records. Call :meth:`committed` once that transaction committed."""
        pieces: list[LogPiece] = []
        moved: dict[Key, tuple[int, int, bool]] = {}
        for key, tail in self._tails.items():
            if ended_only and key in live:
                continue
            new, shipped, seq, capped = self._pieces(key, tail)
            pieces += new
            moved[key] = (shipped, seq, capped)
        self._prepared = (moved, set(live))
        return pieces

    def committed(self) -> None:
        """The pieces of the last :meth:`prepare` are stored: move on, forget ended tries."""
        moved, live = self._prepared
        self._prepared = ({}, set())
        for key, (shipped, seq, capped) in moved.items():
            tail = self._tails.get(key)
            if tail is None:
                continue
            tail.shipped, tail.seq, tail.capped = shipped, seq, capped
            if key not in live:
                del self._tails[key]

    def _pieces(self, key: Key, tail: _Tail) -> tuple[list[LogPiece], int, int, bool]:
        if tail.capped:
            return [], tail.shipped, tail.seq, True
        try:
            size = os.stat(tail.path).st_size
        except OSError:
            return [], tail.shipped, tail.seq, False  # not written yet (or gone)
        end = min(size, self.limit)
        pieces: list[LogPiece] = []
        at, seq = tail.shipped, tail.seq
        if end > at:
            try:
                with open(tail.path, "rb") as f:
                    f.seek(at)
                    data = f.read(end - at)
            except OSError:
                data = b""
            for i in range(0, len(data), PIECE_BYTES):
                part = data[i : i + PIECE_BYTES]
                pieces.append(LogPiece(key[0], key[1], seq, at, part))
                seq += 1
                at += len(part)
        capped = False
        if size > self.limit and at >= self.limit:
            marker = (
                f"\n[orchestrator: the worker shipped the first {self.limit} bytes of this "
                f"log to the store (max_log_bytes + {SHIP_SLACK}); the rest stayed in the "
                "worker's log folder]\n"
            ).encode()
            pieces.append(LogPiece(key[0], key[1], seq, at, marker))
            seq += 1
            at += len(marker)
            capped = True
        return pieces, at, seq, capped
