"""A try's log as the log viewer shows it: lines numbered, levelled and coloured.

Pure (no Flask, no database): text in, escaped HTML out. ANSI colour codes (SGR
``ESC[...m``) become ``<span class="ansi-...">`` around escaped text; every other
escape sequence is dropped, so nothing a task prints reaches the page as markup.
A line's level is the first of DEBUG/INFO/WARNING/ERROR/CRITICAL in its head; a line
without one (a traceback, a print) takes the level of the line before it.

Search never runs the user's text as a pattern: :func:`search` compares plain
substrings (case-folded), so no input can make it backtrack.

>>> str(render_lines("2026-01-01 00:00:00,000 INFO \\x1b[31mred\\x1b[0m <b>\\n", 7))
'<span class="log-line" data-n="7" data-level="info"><span class="lt">2026-01-01 00:00:00,000 INFO <span class="ansi-fg-1">red</span> &lt;b&gt;</span>\\n</span>'
>>> search("a\\nxAx\\nb\\n", "ax", first_line=10)
[(11, 'xAx')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from markupsafe import Markup, escape

LEVELS = ("debug", "info", "warning", "error")
_LEVEL = re.compile(r"\b(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")
_LEVEL_OF = {"WARN": "warning", "CRITICAL": "error", "FATAL": "error"}
_HEAD = 64  # a level word is looked for in a line's first characters only
# CSI sequences (colours are the ``m`` ones), OSC sequences, and lone escapes
_ESCAPES = re.compile(r"\x1b\[([0-9;?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b")
MAX_QUERY = 200  # characters of a search text
MAX_MATCHES = 500  # lines a whole-log search returns


def level_of(line: str, previous: str = "info") -> str:
    """``debug`` / ``info`` / ``warning`` / ``error`` of one line, or ``previous``."""
    found = _LEVEL.search(line, 0, _HEAD)
    if found is None:
        return previous
    word = found.group(1)
    return _LEVEL_OF.get(word, word.lower())


class _Style:
    """The SGR state: foreground, background (0-15) and bold."""

    def __init__(self) -> None:
        self.fg: int | None = None
        self.bg: int | None = None
        self.bold = False

    def apply(self, params: str) -> None:
        codes = [int(c) if c.isdigit() else 0 for c in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.fg, self.bg, self.bold = None, None, False
            elif c == 1:
                self.bold = True
            elif c == 22:
                self.bold = False
            elif 30 <= c <= 37:
                self.fg = c - 30
            elif 90 <= c <= 97:
                self.fg = c - 90 + 8
            elif c == 39:
                self.fg = None
            elif 40 <= c <= 47:
                self.bg = c - 40
            elif 100 <= c <= 107:
                self.bg = c - 100 + 8
            elif c == 49:
                self.bg = None
            elif c in (38, 48) and i + 1 < len(codes):  # 256 colours / RGB: skipped
                i += 2 if codes[i + 1] == 5 else 4
            i += 1

    def classes(self) -> str:
        out = []
        if self.fg is not None:
            out.append(f"ansi-fg-{self.fg}")
        if self.bg is not None:
            out.append(f"ansi-bg-{self.bg}")
        if self.bold:
            out.append("ansi-bold")
        return " ".join(out)


def ansi_html(line: str, style: _Style | None = None) -> str:
    """One line with its ANSI colours as spans; the text escaped, other escapes dropped.
    ``style`` carries the colour state from line to line (a colour may span lines)."""
    style = style or _Style()
    if "\x1b" not in line:
        text = str(escape(line))
        cls = style.classes()
        return f'<span class="{cls}">{text}</span>' if cls and text else text
    out: list[str] = []
    pos = 0
    for found in _ESCAPES.finditer(line):
        out.append(_styled(line[pos : found.start()], style))
        if found.group(2) == "m":
            style.apply(found.group(1) or "")
        pos = found.end()
    out.append(_styled(line[pos:], style))
    return "".join(out)


def _styled(text: str, style: _Style) -> str:
    if not text:
        return ""
    cls = style.classes()
    return f'<span class="{cls}">{escape(text)}</span>' if cls else str(escape(text))


def split_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` without their line ends (a last line may have none)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    yield from lines


def render_lines(text: str, first_line: int = 1, level: str = "info") -> Markup:
    """``text`` as one ``<span class="log-line">`` per line, numbered from ``first_line``
    (shown by CSS from ``data-n``, so copying the log copies no numbers), each with its
    ``data-level``; ``level`` is the level before the first line."""
    style = _Style()
    out = []
    for n, line in enumerate(split_lines(text), first_line):
        line = line.removesuffix("\r")
        level = level_of(line, level)
        out.append(
            f'<span class="log-line" data-n="{n}" data-level="{level}">'
            f'<span class="lt">{ansi_html(line, style)}</span>\n</span>'
        )
    return Markup("".join(out))


def last_level(text: str, level: str = "info") -> str:
    """The level in force after ``text`` (for the lines that follow it)."""
    for line in reversed(list(split_lines(text))):
        found = _LEVEL.search(line, 0, _HEAD)
        if found is not None:
            return level_of(line)
    return level


def plain(line: str) -> str:
    """A line without its escape sequences (what search compares and results show)."""
    return _ESCAPES.sub("", line) if "\x1b" in line else line


def search(
    text: str, query: str, *, first_line: int = 1, limit: int = MAX_MATCHES
) -> list[tuple[int, str]]:
    """(line number, line) of each line containing ``query``, case-insensitively, as a
    plain substring (never a pattern); at most ``limit`` of them."""
    needle = query.casefold()
    out = []
    for n, line in enumerate(split_lines(text), first_line):
        clean = plain(line.removesuffix("\r"))
        if needle in clean.casefold():
            out.append((n, clean))
            if len(out) >= limit:
                break
    return out


def whole_lines(text: str, finished: bool) -> str:
    """``text`` up to its last line end while the try runs (the rest is still being
    written); all of it once the try ended."""
    if finished or text.endswith("\n"):
        return text
    cut = text.rfind("\n")
    return text[: cut + 1] if cut >= 0 else ""
