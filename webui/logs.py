"""Reading task try logs, safely and in bounded pieces: from this machine's log folder
when the try ran here, else from the store (the pieces its worker shipped, issue 17).

>>> read_log("/state/logs", "etl/run/extract/1.log")         # doctest: +SKIP
LogChunk(text='...', offset=0, next_offset=1234, missing=False, source='file')
>>> read_try_log(store, "/state/logs", try_record, offset=0)  # doctest: +SKIP
LogChunk(text='...', offset=0, next_offset=1234, missing=False, source='store')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
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


# --- the log viewer (issue 27): pages aligned on whole lines, numbered ------------------

BLOCK = 1 << 20  # bytes per read when counting lines, searching or downloading


@dataclass(frozen=True)
class LogPage:
    """Whole lines of a try's log: bytes ``offset``..``next_offset`` of ``size``, the
    first of them line number ``first_line``."""

    text: str
    offset: int
    next_offset: int
    first_line: int
    size: int


def open_try_log(store: Any, log_dir: str, t: Any) -> tuple[Any, int, str] | None:
    """(a binary file, its size, "file" or "store") for a try's log; None if neither
    this machine's log folder nor the store has any of it."""
    from orchestrator.store.observe.log_store import StoredLogFile

    path = resolve(log_dir, t.log_path)
    if path is not None and os.path.isfile(path):
        f = open(path, "rb")  # noqa: SIM115 - the caller closes it (or streams it)
        return f, f.seek(0, os.SEEK_END), "file"
    stored = StoredLogFile(store, t.ti_id, t.try_number)
    if not stored.pieces:
        return None
    return stored, stored.size, "store"


def count_lines(f: Any, upto: int) -> int:
    """The number of line ends in the first ``upto`` bytes of ``f``."""
    f.seek(0)
    count, left = 0, upto
    while left > 0 and (data := f.read(min(BLOCK, left))):
        count += data.count(b"\n")
        left -= len(data)
    return count


def _whole(data: bytes, finished: bool, limit: int) -> bytes:
    """``data`` up to its last line end while the try runs (the rest is being written)."""
    if finished or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n")
    if cut < 0:  # no line end at all: a line longer than a page is shown as it is
        return data if len(data) >= limit else b""
    return data[: cut + 1]


def log_page(
    f: Any,
    size: int,
    *,
    finished: bool,
    offset: int | None = None,
    before: int | None = None,
    line: int | None = None,
    limit: int = TAIL_BYTES,
) -> LogPage:
    """A page of whole lines: from ``offset`` on (following a running try), or the
    ``limit`` bytes before ``before`` (an earlier page), or the last ``limit`` bytes.
    ``line`` is the number of the line starting at ``offset`` or at ``before`` (so
    lines need not be counted again); without it the lines before are counted."""
    if offset is not None:
        start = min(offset, size)
        f.seek(start)
        data = _whole(f.read(limit), finished, limit)
        first = line if line is not None else count_lines(f, start) + 1
        return LogPage(data.decode("utf-8", "replace"), start, start + len(data), first, size)
    end = size if before is None else min(before, size)
    start = max(end - limit, 0)
    if start > 0:  # begin after the first line end: never half a line
        f.seek(start - 1)
        data = f.read(end - start + 1)
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else data[1:]
    else:
        f.seek(0)
        data = f.read(end)
    start = end - len(data)
    if before is None:
        data = _whole(data, finished, limit)
    elif end < size:  # an earlier page ends on a line end too, whatever ``before`` said
        data = _whole(data, False, limit)
    if line is not None and before is not None:
        first = line - data.count(b"\n")
    else:
        first = count_lines(f, start) + 1
    return LogPage(data.decode("utf-8", "replace"), start, start + len(data), first, size)


def whole_blocks(f: Any) -> Iterator[tuple[str, int]]:
    """The whole log as (text of whole lines, its first line number), a block at a time."""
    f.seek(0)
    rest, line = b"", 1
    while data := f.read(BLOCK):
        data = rest + data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) < 4 * BLOCK:
            rest = data
            continue
        cut = cut or len(data)
        rest = data[cut:]
        text = data[:cut].decode("utf-8", "replace")
        yield text, line
        line += text.count("\n")
    if rest:
        yield rest.decode("utf-8", "replace"), line


def raw_blocks(f: Any, size: int) -> Iterator[bytes]:
    """The log's first ``size`` bytes as they are, a block at a time (a running try's
    log grows meanwhile: the download is what there was); closes ``f`` at the end."""
    try:
        f.seek(0)
        left = size
        while left > 0 and (data := f.read(min(BLOCK, left))):
            left -= len(data)
            yield data
    finally:
        f.close()


@dataclass(frozen=True)
class LogView:
    """What the log viewer shows of one try: a :class:`LogPage` and where it is from."""

    page: LogPage | None  # None: no log (yet)
    source: str = "file"

    @property
    def missing(self) -> bool:
        return self.page is None


def view_try_log(
    store: Any,
    log_dir: str,
    t: Any,
    *,
    offset: int | None = None,
    before: int | None = None,
    line: int | None = None,
    mask: Callable[[str], str] | None = None,
) -> LogView:
    """A page of a try's log (the last one unless ``offset`` / ``before``), see :func:`log_page`;
    ``mask`` hides the settings' secrets in its text (issue 24)."""
    opened = open_try_log(store, log_dir, t)
    if opened is None:
        return LogView(None, "store")
    f, size, source = opened
    with f:
        page = log_page(
            f, size, finished=t.end_date is not None, offset=offset, before=before, line=line
        )
    if mask is not None and page.text:
        page = replace(page, text=mask(page.text))
    return LogView(page, source)


def find_try(store: Any, run_id: str, task_id: str, try_number: int, map_index: int | None) -> Any:
    """The TryRecord of one try; NotFoundError naming what is unknown."""
    if map_index is None:  # a mapped task's first instance, as the task page shows it
        map_index = store.task_instance(run_id, task_id).map_index
    tries = {t.try_number: t for t in store.tries(run_id, task_id, map_index)}
    if try_number not in tries:
        from orchestrator.errors import NotFoundError

        store.task_instance(run_id, task_id)  # 404 naming an unknown run or task first
        started = f"tries 1..{max(tries)}" if tries else "it has not started yet"
        raise NotFoundError(f"task {task_id!r} of {run_id} has no try {try_number} ({started})")
    return tries[try_number]


def search_try_log(
    store: Any, log_dir: str, t: Any, query: str, *, mask: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """The lines of a try's whole log holding ``query`` (a plain text, never a pattern),
    at most ``log_view.MAX_MATCHES`` of them; searched after ``mask`` (issue 24), so a
    hidden secret is neither shown nor found."""
    from .log_view import MAX_MATCHES, search

    opened = open_try_log(store, log_dir, t)
    matches: list[tuple[int, str]] = []
    if opened is not None:
        f, _, _ = opened
        with f:
            for text, first in whole_blocks(f):
                if mask is not None:
                    text = mask(text)
                matches += search(text, query, first_line=first, limit=MAX_MATCHES + 1)
                if len(matches) > MAX_MATCHES:
                    break
    return {
        "query": query,
        "matches": [{"line": n, "text": line} for n, line in matches[:MAX_MATCHES]],
        "truncated": len(matches) > MAX_MATCHES,
        "missing": opened is None,
    }
