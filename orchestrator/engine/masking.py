"""Replacing secret values with ``***`` in what a try writes and reports.

A try's :class:`Masker` learns every secret the try reads (a variable that is secret,
a connection's password and extra) and masks them in its log (through
:class:`~orchestrator.engine.tasklog.CappedLog`), its error text and its result. Each
secret is also masked in the spellings it commonly takes when printed: percent-encoded
(as in a connection's URI), JSON- and ``repr``-escaped. Values shorter than
:data:`MIN_LENGTH` characters are not masked (they would mask every ``a`` or ``10``
of a log). A secret of :data:`MIN_TRANSFORMED` characters or more is also masked
upper- and lower-cased, base64-encoded (standard and URL-safe, with or without
padding, alone or inside a longer encoded text such as ``Basic <user:password>``),
hex-encoded (lower and upper case) and percent-encoded in either case
(:func:`transformed_spellings`); other transformations are not caught. See
docs/secrets.md.

>>> m = Masker(); m.add("s3cret!")
>>> m.mask("password=s3cret! url=pg://u:s3cret%21@h")
'password=*** url=pg://u:***@h'
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
from typing import Any
from urllib.parse import quote, quote_plus

MASK = "***"
MIN_LENGTH = 4
MIN_TRANSFORMED = 8  # secrets this long are masked in transformed spellings too (issue 24)


def _base64_cores(data: bytes) -> set[str]:
    """The base64 text of ``data`` wherever it starts in a longer encoded text: for each
    of the three alignments, the characters that depend on ``data`` alone."""
    out = set()
    for lead in range(3):  # bytes of the longer text before the secret in its group
        enc = base64.b64encode(b"\0" * lead + data + b"\0\0").decode()
        skip = (0, 2, 3)[lead]  # leading characters that mix in the bytes before
        rest = (lead + len(data)) % 3  # the secret's bytes in its last, shared group
        end = (lead + len(data)) // 3 * 4 + (0, 1, 2)[rest]  # ... and its pure characters
        core = enc[skip:end]
        if len(core) >= MIN_TRANSFORMED:
            out.add(core)
    out.add(base64.b64encode(data).decode())  # alone, padded
    out.add(base64.b64encode(data).decode().rstrip("="))
    return out


def transformed_spellings(value: str) -> set[str]:
    """The spellings a secret of MIN_TRANSFORMED characters or more is masked in besides
    its own: upper and lower case, base64 (standard and URL-safe), hex (both cases) and
    percent-encoding of either case. Empty for a shorter value.

    >>> sorted(transformed_spellings("Hunter2!xyz"))[:3]
    ['48756E746572322178797A', '48756e746572322178797a', 'HUNTER2!XYZ']
    """
    if len(value.strip()) < MIN_TRANSFORMED:
        return set()
    data = value.encode("utf-8", "surrogateescape")
    cased = {value.upper(), value.lower()}
    b64 = _base64_cores(data)
    out = cased | b64 | {s.translate(_URLSAFE) for s in b64}
    out |= {data.hex(), data.hex().upper()}
    out |= {quote(c, safe="") for c in cased} | {quote_plus(c) for c in cased}
    out |= {_upper_percent(quote(value, safe=""))}
    return {s for s in out if len(s) >= MIN_TRANSFORMED}


_URLSAFE = str.maketrans("+/", "-_")


def _upper_percent(text: str) -> str:
    return re.sub(r"%[0-9a-f]{2}", lambda m: m.group(0).upper(), text)


def _lower_percent(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


class Masker:
    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        self._encoded: list[bytes] = []
        self._by_first: dict[int, list[bytes]] = {}  # the secrets, by their first byte
        self.longest = 0  # bytes of the longest secret

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def add(self, value: str | None) -> None:
        if not isinstance(value, str) or len(value.strip()) < MIN_LENGTH:
            return
        spellings = {
            value,
            quote(value, safe=""),
            quote(value),
            quote_plus(value),
            json.dumps(value)[1:-1],
            repr(value)[1:-1],
        }
        spellings |= {line for line in value.splitlines() if len(line.strip()) >= MIN_LENGTH}
        spellings |= transformed_spellings(value)
        spellings |= {_lower_percent(s) for s in spellings if "%" in s}
        new = spellings - self._secrets
        if not new:
            return
        self._secrets |= new
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._text = re.compile("|".join(re.escape(s) for s in ordered))
        self._encoded = [s.encode("utf-8", "surrogateescape") for s in ordered]
        self._bytes = re.compile(b"|".join(re.escape(s) for s in self._encoded))
        self.longest = len(self._encoded[0])
        self._by_first = {}
        for s in self._encoded:
            self._by_first.setdefault(s[0], []).append(s)

    def mask(self, text: str) -> str:
        if self._text is None or not isinstance(text, str):
            return text
        return self._text.sub(MASK, text)

    def mask_bytes(self, data: bytes) -> bytes:
        if self._bytes is None:
            return data
        return self._bytes.sub(MASK.encode(), data)

    def held_back(self, data: bytes) -> int:
        """How many bytes at the end of ``data`` may be the start of a secret that the
        next write completes (so they wait for it)."""
        low = max(0, len(data) - self.longest + 1)
        starts = []  # where a secret could begin in the last longest-1 bytes
        for first in self._by_first:
            at = data.find(first, low)
            while at >= 0:
                starts.append(at)
                at = data.find(first, at + 1)
        for at in sorted(starts):  # the earliest start holds back the most
            tail = data[at:]
            if any(len(s) > len(tail) and s.startswith(tail) for s in self._by_first[data[at]]):
                return len(data) - at
        return 0

    def mask_value(self, value: Any) -> Any:
        """``value`` (a JSON value) with every secret masked in its strings."""
        if not self:
            return value
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask_value(k): self.mask_value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask_value(v) for v in value]
        return value


def mask_outcome(masker: Masker, outcome: dict[str, Any]) -> dict[str, Any]:
    """A try's outcome with its error text and its result (JSON text, whatever kind of
    task made it: an HTTP task's answer may echo a secret) masked."""
    if not masker:
        return outcome
    out = dict(outcome)
    if isinstance(out.get("error"), str):
        out["error"] = masker.mask(out["error"])
    result = out.get("result")
    if isinstance(result, str):
        masked = masker.mask(result)  # JSON-escaped spellings are masked too
        if masked != result:
            try:
                json.loads(masked)
            except ValueError:  # a secret that spanned JSON syntax: mask the value
                masked = json.dumps(masker.mask_value(json.loads(result)))
        out["result"] = masked
    return out


class MaskedStream(io.TextIOBase):
    """A text stream that masks what it writes to ``out`` (``tasks test`` prints a
    try's output to the terminal through one). Like :class:`CappedLog`, it holds back
    the end of a write that may begin a secret until the next write; ``flush`` does not
    release it (a task that prints a secret one character at a time, flushing each,
    would otherwise print it whole), only :meth:`finish` at the end of the output.
    Thread-safe: ``tasks test`` feeds it from the file-descriptor pump too, and each
    source (``write`` for Python's ``sys.stdout``, ``write_bytes`` for the pump) holds
    back its own end: one buffer for both let a secret's first half, held from the
    pipe, be written out in clear in front of the next ``print``."""

    def __init__(self, out: Any, masker: Masker) -> None:
        self.out = out
        self.masker = masker
        self._held: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.write_bytes(s.encode("utf-8", "surrogateescape"), source="text")
        return len(s)

    def write_bytes(self, data: bytes, source: str = "fd") -> None:
        with self._lock:
            if self.masker:
                data = self.masker.mask_bytes(self._held.get(source, b"") + data)
                keep = self.masker.held_back(data)
                self._held[source] = data[len(data) - keep :] if keep else b""
                data = data[: len(data) - keep]
            if data:
                self.out.write(data.decode("utf-8", "replace"))

    def flush(self) -> None:
        with self._lock:
            self.out.flush()

    def finish(self) -> None:
        """The output ended: write what was held back as it is, and flush."""
        with self._lock:
            held, self._held = self._held, {}
            for source in sorted(held):
                if held[source]:
                    self.out.write(held[source].decode("utf-8", "replace"))
            self.out.flush()
