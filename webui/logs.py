"""Reading task try logs, safely and in bounded pieces: from this machine's log folder
when the try ran here, else from the store (the pieces its worker shipped, issue 17).

>>> read_log("/state/logs", "etl/run/extract/1.log")         # doctest: +SKIP
LogChunk(text='...', offset=0, next_offset=1234, missing=False, source='file')
>>> read_try_log(store, "/state/logs", try_record, offset=0)  # doctest: +SKIP
LogChunk(text='...', offset=0, next_offset=1234, missing=False, source='store')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class LogChunk:
    text: str
    offset: int  # where ``text`` starts in the file
    next_offset: int  # ask for this offset to get what was appended since
    missing: bool  # no such file (yet), or not readable from this machine
    source: str = "file"  # "file" (this machine's log folder) or "store" (shipped)


def resolve(log_dir: str, rel_path: str | None) -> str | None:
    """The absolute path of a log inside ``log_dir``; None if it would leave it."""
    if not rel_path:
        return None
    root = os.path.realpath(log_dir)
    path = os.path.realpath(os.path.join(root, rel_path))
    return path if path.startswith(root + os.sep) else None


def read_log(
    log_dir: str, rel_path: str | None, offset: int | None = None, limit: int = TAIL_BYTES
) -> LogChunk:
    """From ``offset`` (at most ``limit`` bytes), or the last ``limit`` bytes if None."""
    path = resolve(log_dir, rel_path)
    if path is None or not os.path.isfile(path):
        return LogChunk("", 0, 0, True)
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(size - limit, 0) if offset is None else min(max(offset, 0), size)
        f.seek(start)
        data = f.read(limit)
    return LogChunk(data.decode("utf-8", "replace"), start, start + len(data), False)


def read_try_log(
    store: Any,
    log_dir: str,
    t: Any,
    offset: int | None = None,
    limit: int = TAIL_BYTES,
    *,
    mask: Callable[[str], str] | None = None,
) -> LogChunk:
    """A try's log (``t``: a TryRecord): the local file if the try ran on this machine,
    else what its worker shipped to the store; ``missing`` if neither has any. ``mask``
    (the settings' secrets, issue 24) is applied to the text; offsets stay the file's."""
    chunk = _read_try_log(store, log_dir, t, offset, limit)
    return replace(chunk, text=mask(chunk.text)) if mask and chunk.text else chunk


def _read_try_log(store: Any, log_dir: str, t: Any, offset: int | None, limit: int) -> LogChunk:
    local = read_log(log_dir, t.log_path, offset, limit)
    if not local.missing:
        return local
    stored = store.stored_log(t.ti_id, t.try_number, offset, limit)
    if not stored.pieces:
        return LogChunk("", 0, 0, True, "store")
    text = stored.data.decode("utf-8", "replace")
    return LogChunk(text, stored.start, stored.start + len(stored.data), False, "store")
