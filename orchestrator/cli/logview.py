"""Printing a try's log: streamed in constant memory, its last lines, terminal-safe.

A log holds whatever the task printed, escape sequences included: on a terminal an
ESC can retitle the window, move the cursor, hide lines or (on some terminals) make
it answer with typed text. ``escape_controls`` shows every control character (C0 and
C1 except newline and tab, DEL, and the bidirectional overrides) as a visible ``\\xNN``
or ``\\uNNNN``; invalid UTF-8 is shown as ``\\xNN`` too.

>>> escape_controls("red \\x1b[31m\\x00 done\\n")
'red \\\\x1b[31m\\\\x00 done\\n'
"""

from __future__ import annotations

import codecs
import contextlib
import os
from typing import BinaryIO

CHUNK = 64 * 1024

_TABLE: dict[int, str] = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
del _TABLE[ord("\n")], _TABLE[ord("\t")]
_TABLE.update({c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def escape_controls(text: str) -> str:
    return text.translate(_TABLE)


def tail_offset(f: BinaryIO, lines: int) -> int:
    """Where the last ``lines`` lines of ``f`` start, reading backwards block by block."""
    end = f.seek(0, os.SEEK_END)
    if lines <= 0:
        return end
    pos = end
    wanted = lines + 1  # the newline before the first line wanted
    last = True
    while pos > 0:
        size = min(CHUNK, pos)
        pos -= size
        f.seek(pos)
        block = f.read(size)
        if last and block.endswith(b"\n"):
            block = block[:-1]  # a final newline ends the last line, it does not start one
        last = False
        i = len(block)
        while True:
            i = block.rfind(b"\n", 0, i)
            if i < 0:
                break
            wanted -= 1
            if wanted == 1:
                return pos + i + 1
    return 0


def _open(source: str | BinaryIO) -> BinaryIO:
    """A path is opened; an open file (a ``StoredLogFile``) is used as it is."""
    if isinstance(source, str):
        return open(source, "rb")  # noqa: SIM115 - closed by the caller's ``with``
    return contextlib.nullcontext(source)  # type: ignore[return-value]


def stream_log(
    source: str | BinaryIO, out: BinaryIO, *, tail: int | None = None, escape: bool = False,
    start: int | None = None,
) -> int:  # fmt: skip
    """Copy the log at ``source`` (a path or a binary file; its last ``tail`` lines, or
    from byte ``start``) to ``out``; returns the bytes read."""
    total = 0
    decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")
    with _open(source) as f:  # noqa: SIM117
        if start is not None:
            f.seek(start)
        else:
            f.seek(tail_offset(f, tail) if tail is not None else 0)
        while True:
            data = f.read(CHUNK)
            total += len(data)
            final = not data
            if escape:
                out.write(escape_controls(decoder.decode(data, final)).encode("utf-8"))
            elif data:
                out.write(data)
            if final:
                break
    out.flush()
    return total


def read_log_text(source: str | BinaryIO, *, tail: int | None = None) -> str:
    """The log (its last ``tail`` lines) as text, for ``--json``."""
    with _open(source) as f:
        f.seek(tail_offset(f, tail) if tail is not None else 0)
        return f.read().decode("utf-8", "backslashreplace")
