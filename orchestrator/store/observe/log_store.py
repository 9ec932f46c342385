"""Try logs in the store: the bytes a worker shipped from a try's log file (0018).

The worker that runs a try tails the try's log file and appends what is new as
numbered pieces (``seq`` 0, 1, 2...), each naming the byte range of the file it holds.
Readers on any machine read a range back, so a try's log is readable wherever it
ran, while it runs and after its worker is gone. Pieces are never changed; a piece
shipped twice (a commit whose answer was lost) is ignored the second time.

>>> store.ship_log([LogPiece(ti_id=7, try_number=1, seq=0, start_byte=0, data=b"hi\\n")], now)
... # doctest: +SKIP
>>> store.stored_log(7, 1, offset=0).data  # doctest: +SKIP
b'hi\\n'
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase

lc = m.log_chunks


@dataclass(frozen=True)
class LogPiece:
    """Bytes ``[start_byte, start_byte + len(data))`` of one try's log file."""

    ti_id: int
    try_number: int
    seq: int
    start_byte: int
    data: bytes


@dataclass(frozen=True)
class StoredLog:
    """Part of a shipped log: ``data`` starts at byte ``start``; ``size`` is all shipped."""

    data: bytes
    start: int
    size: int
    pieces: int  # how many pieces were shipped in all (0: nothing stored)


class LogStore(StoreBase):
    def ship_log(self, pieces: list[LogPiece], now: datetime) -> int:
        """Append shipped pieces, in one transaction; returns how many were new."""
        if not pieces:
            return 0
        with self.write() as conn:
            return insert_pieces(conn, pieces, now, count=True) or 0

    def stored_log_size(self, ti_id: int, try_number: int) -> tuple[int, int]:
        """(bytes shipped, pieces shipped) of one try."""
        with self.read() as conn:
            row = conn.execute(
                select(func.max(lc.c.end_byte), func.count()).where(
                    lc.c.ti_id == ti_id, lc.c.try_number == try_number
                )
            ).one()
        return int(row[0] or 0), int(row[1] or 0)

    def stored_log(
        self, ti_id: int, try_number: int, offset: int | None = None, limit: int = 64 * 1024
    ) -> StoredLog:
        """At most ``limit`` shipped bytes from ``offset`` (the last ``limit`` if None)."""
        size, count = self.stored_log_size(ti_id, try_number)
        start = max(size - limit, 0) if offset is None else min(max(offset, 0), size)
        if count == 0 or start >= size:
            return StoredLog(b"", start, size, count)
        with self.read() as conn:
            rows = conn.execute(
                select(lc.c.start_byte, lc.c.data)
                .where(
                    lc.c.ti_id == ti_id,
                    lc.c.try_number == try_number,
                    lc.c.end_byte > start,
                    lc.c.start_byte < start + limit,
                )
                .order_by(lc.c.seq)
            ).all()
        data = _join(rows, start)[:limit]
        return StoredLog(data, start, size, count)


def insert_pieces(
    conn: Connection, pieces: Sequence[LogPiece], now: datetime, *, count: bool = False
) -> int | None:
    """Append pieces inside the caller's transaction (a worker's outcome commit, or
    :meth:`LogStore.ship_log`); one already stored is left alone. ``count``: return how
    many were new (a RETURNING per row; the outcome commit does without)."""
    rows = [
        {"ti_id": p.ti_id, "try_number": p.try_number, "seq": p.seq,
         "start_byte": p.start_byte, "end_byte": p.start_byte + len(p.data),
         "data": p.data, "created_at": now}
        for p in pieces
    ]  # fmt: skip
    if not rows:
        return 0
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    stmt = dialect_insert(lc).on_conflict_do_nothing(index_elements=["ti_id", "try_number", "seq"])
    if not count:
        conn.execute(stmt, rows)
        return None
    return len(conn.execute(stmt.returning(lc.c.id), rows).all())


def _join(rows: list, start: int) -> bytes:
    """The pieces' bytes joined, from byte ``start`` on; stops at a gap."""
    out = bytearray()
    at = start
    for first, data in rows:
        data = bytes(data)
        if first + len(data) <= at:
            continue
        if first > at:
            break  # a gap (never expected: pieces are shipped in order)
        out += data[at - first :]
        at = first + len(data)
    return bytes(out)


class StoredLogFile(io.RawIOBase):
    """A shipped log as a read-only binary file (``seek``, ``read``), read piece by piece,
    so code written for log files (``cli.logview``) reads the store the same way.

    >>> with StoredLogFile(store, ti_id=7, try_number=1) as f:  # doctest: +SKIP
    ...     f.seek(-100, os.SEEK_END); f.read()
    """

    def __init__(self, store: LogStore, ti_id: int, try_number: int) -> None:
        super().__init__()
        self._store, self._key = store, (ti_id, try_number)
        self.size, self.pieces = store.stored_log_size(ti_id, try_number)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self.size}[whence]
        self._pos = max(base + pos, 0)
        return self._pos

    def readall(self) -> bytes:
        parts = []
        while data := self.read(1 << 20):  # a megabyte per read, not io's 8 KiB
            parts.append(data)
        return b"".join(parts)

    def readinto(self, buffer: Any) -> int:
        if self._pos >= self.size:
            return 0
        want = min(len(buffer), self.size - self._pos)
        data = self._store.stored_log(*self._key, offset=self._pos, limit=want).data
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)
