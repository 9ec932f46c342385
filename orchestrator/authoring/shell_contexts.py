"""Where each template value lands in a shell command, and how the command refers to it.

A shell task's command is rendered with every ``{{ expression }}`` replaced by a marker;
:func:`place_values` then reads the text the way ``/bin/sh`` will and writes, in each
marker's place, a reference to the environment variable that holds the value, spelled
for the quoting context around it:

=======================  ====================  ==========================================
context                  becomes               because
=======================  ====================  ==========================================
bare word                ``"${ORCH_V1}"``      one word: no splitting, no globbing
inside ``"..."``         ``${ORCH_V1}``        expands inside the double quotes
inside ``'...'``         ``'"${ORCH_V1}"'``    closes the single quotes around it
backticks, ``$( )``      ``"${ORCH_V1}"``      a command of its own
heredoc body ``<<EOF``   ``${ORCH_V1}``        the body expands ``$`` (quotes are text)
inside ``$(( ))``        ``${ORCH_V1}``        only if the value is an integer
heredoc ``<<'EOF'``      refused               the body expands nothing
inside ``$'...'``        refused               it cannot take a reference
right after a ``\\``     refused               the backslash would escape the reference
a heredoc delimiter      refused               the delimiter must be known before it runs
=======================  ====================  ==========================================

(``${name:-{{ x }}}`` takes the quoting of where the ``${`` stands.)

The shell expands a variable once and never reads the result as shell syntax, so no value
can inject anything, whatever it holds. Reading the context right only decides whether
the value arrives as the command's author meant (one word, inside the string).
Alongside, a *display* text writes each value in, quoted for its context, so logs and
the UI show a readable command that means the same.

>>> text = 'echo {0} "{0}"'.format(marker("7", 0))
>>> script, display = place_values(text, ["a b"], ["V1"], "7")
>>> print(script)
echo "${V1}" "${V1}"
>>> print(display)
echo 'a b' "a b"
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_CMD_KINDS = ("cmd", "bq", "cmdsub")
_WORD_BREAK = set(" \t\n;&|()<>")
# what a backslash escapes where (None: any character)
_ESCAPES = {"dq": '$`"\\\n', "heredoc": "$`\\\n", "param": None, "arith": None}


class ShellContextError(ValueError):
    """A value stands where the shell cannot receive it safely (the message says where)."""


def marker(nonce: str, index: int) -> str:
    return f"\x00{nonce}.{index}\x00"


def marker_pattern(nonce: str) -> re.Pattern[str]:
    return re.compile(f"\x00{re.escape(nonce)}\\.([0-9]+)\x00")


@dataclass
class _Frame:
    kind: str  # cmd | bq | cmdsub | dq | param | arith | heredoc
    depth: int = 0  # open ( in a command, { in ${...}, ( in $(( ))
    quoted: bool = False  # a ${...} inside double quotes or a heredoc body


@dataclass
class _Heredoc:
    delimiter: str
    quoted: bool
    strip_tabs: bool


@dataclass
class _Placer:
    text: str
    values: list[str] | None  # None: checking a template, values unknown
    names: list[str]
    labels: list[str] | None
    nonce: str
    script: list[str] = field(default_factory=list)
    display: list[str] = field(default_factory=list)
    pending: list[_Heredoc] = field(default_factory=list)

    # -- output ---------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.script.append(text)
        self.display.append(text)

    def label(self, index: int) -> str:
        if self.labels is not None:
            return self.labels[index]
        return "a {{ ... }} value"

    def where(self, at: int) -> str:
        line = self.text.count("\n", 0, at) + 1
        return f" (line {line} of the command)" if "\n" in self.text else ""

    def fail(self, index: int, at: int, why: str) -> ShellContextError:
        return ShellContextError(f"{self.label(index)}{self.where(at)} {why}")

    def read_marker(self, at: int) -> tuple[int, int]:
        """(value index, end offset) of the marker starting at ``at``."""
        found = marker_pattern(self.nonce).match(self.text, at)
        if found is None:
            raise ShellContextError(
                "the command contains a NUL byte, or a filter changed a value's placeholder"
            )
        return int(found[1]), found.end()

    def place(self, at: int, context: str) -> int:
        """Write the value whose marker starts at ``at`` for ``context``; its end offset."""
        index, end = self.read_marker(at)
        name = "${" + self.names[index] + "}" if self.values is not None else "${VALUE}"
        value = self.values[index] if self.values is not None else ""
        if context == "bare":
            self.script.append(f'"{name}"')
            self.display.append(shlex.quote(value))
        elif context == "sq":
            self.script.append(f"'\"{name}\"'")
            self.display.append(value.replace("'", "'\\''"))
        elif context == "dq":
            self.script.append(name)
            self.display.append(re.sub(r'([\\$`"])', r"\\\1", value))
        elif context == "heredoc":
            self.script.append(name)
            self.display.append(re.sub(r"([\\$`])", r"\\\1", value))
        elif context == "arith":
            if self.values is not None and not re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
                raise self.fail(
                    index,
                    at,
                    f"is inside $(( )), where the shell would evaluate it as an expression, "
                    f"so it must be an integer, not {value[:80]!r}; do the arithmetic in the "
                    "template instead: {{ params.n * 2 }}",
                )
            self.script.append(name)
            self.display.append(value)
        else:  # pragma: no cover
            raise AssertionError(context)
        return end

    # -- reading ----------------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        self.scan(0, len(self.text), [_Frame("cmd")])
        return "".join(self.script), "".join(self.display)

    def scan(self, i: int, stop: int, stack: list[_Frame]) -> None:
        word_start = True
        while i < stop:
            frame = stack[-1]
            ch = self.text[i]
            nxt = self.text[i + 1] if i + 1 < stop else ""
            if frame.kind in _CMD_KINDS:
                i, word_start = self.in_command(i, stop, stack, word_start)
                continue
            if ch == "\x00":
                context = frame.kind
                if frame.kind == "param":
                    context = "dq" if frame.quoted else "bare"
                i = self.place(i, context)
                continue
            if ch == "\\":
                i = self.backslash(i, stop, _ESCAPES.get(frame.kind))
                continue
            if ch == "$":
                i = self.dollar(i, stop, stack, frame.kind == "param" and not frame.quoted)
                continue
            if ch == "`":
                stack.append(_Frame("bq"))
                self.emit(ch)
                i += 1
                continue
            if frame.kind == "dq" and ch == '"':
                stack.pop()
            elif frame.kind == "param":
                if ch == '"':
                    stack.append(_Frame("dq"))
                elif ch == "'" and not frame.quoted:
                    i = self.single_quoted(i, stop)
                    continue
                elif ch == "{":
                    frame.depth += 1
                elif ch == "}":
                    if frame.depth == 0:
                        stack.pop()
                    else:
                        frame.depth -= 1
            elif frame.kind == "arith":
                if ch == "(":
                    frame.depth += 1
                elif ch == ")":
                    if frame.depth == 0 and nxt == ")":
                        stack.pop()
                        self.emit("))")
                        i += 2
                        continue
                    frame.depth = max(frame.depth - 1, 0)
            self.emit(ch)
            i += 1

    def in_command(
        self, i: int, stop: int, stack: list[_Frame], word_start: bool
    ) -> tuple[int, bool]:
        """One step in a command (top level, backticks or $( )); (next offset, word start)."""
        frame, text = stack[-1], self.text
        ch = text[i]
        nxt = text[i + 1] if i + 1 < stop else ""
        if ch == "\x00":
            return self.place(i, "bare"), False
        if ch == "\\":
            if nxt == "`" and frame.kind == "bq":  # a nested backtick: stays a command
                self.emit("\\`")
                return i + 2, False
            return self.backslash(i, stop, None), False
        if ch == "'":
            return self.single_quoted(i, stop), False
        if ch == '"':
            stack.append(_Frame("dq"))
        elif ch == "`":
            if frame.kind == "bq":
                stack.pop()
            else:
                stack.append(_Frame("bq"))
        elif ch == "$":
            return self.dollar(i, stop, stack, True), False
        elif ch == "#" and word_start:
            end = text.find("\n", i, stop)
            end = stop if end < 0 else end
            while i < end:  # a comment: values in it are placed but never used
                if text[i] == "\x00":
                    i = self.place(i, "bare")
                else:
                    self.emit(text[i])
                    i += 1
            return i, True
        elif ch == "(":
            frame.depth += 1
        elif ch == ")":
            if frame.kind == "cmdsub" and frame.depth == 0:
                stack.pop()
            else:
                frame.depth = max(frame.depth - 1, 0)
        elif ch == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            return self.heredoc_operator(i, stop), False
        elif ch == "<" and text.startswith("<<<", i):
            self.emit("<<<")
            return i + 3, True
        elif ch == "\n":
            self.emit(ch)
            return self.heredoc_bodies(i + 1, stop), True
        self.emit(ch)
        return i + 1, ch in _WORD_BREAK

    def backslash(self, i: int, stop: int, escapes: str | None) -> int:
        """A backslash: escapes the next character (any, or only those in ``escapes``)."""
        nxt = self.text[i + 1] if i + 1 < stop else ""
        if nxt == "\x00":
            index, _ = self.read_marker(i + 1)
            raise self.fail(
                index,
                i,
                "follows a backslash; remove it: a value never needs escaping, the shell "
                "never reads it as syntax",
            )
        if nxt and (escapes is None or nxt in escapes):
            self.emit(self.text[i : i + 2])
            return i + 2
        self.emit("\\")
        return i + 1

    def dollar(self, i: int, stop: int, stack: list[_Frame], ansi: bool) -> int:
        text = self.text
        if text.startswith("$((", i):
            stack.append(_Frame("arith"))
            self.emit("$((")
            return i + 3
        if text.startswith("$(", i):
            stack.append(_Frame("cmdsub"))
            self.emit("$(")
            return i + 2
        if text.startswith("${", i):
            inside = stack[-1].kind in ("dq", "heredoc") or stack[-1].quoted
            stack.append(_Frame("param", quoted=inside))
            self.emit("${")
            return i + 2
        if ansi and text.startswith("$'", i):
            return self.ansi_quoted(i, stop)
        if text.startswith("$\x00", i):  # a literal dollar sign before a value: "$5"
            self.emit("\\$")
            return i + 1
        self.emit("$")
        return i + 1

    def single_quoted(self, i: int, stop: int) -> int:
        self.emit("'")
        i += 1
        while i < stop and self.text[i] != "'":
            if self.text[i] == "\x00":
                i = self.place(i, "sq")
            else:
                self.emit(self.text[i])
                i += 1
        if i < stop:
            self.emit("'")
            i += 1
        return i

    def ansi_quoted(self, i: int, stop: int) -> int:
        j = i + 2
        while j < stop and self.text[j] != "'":
            if self.text[j] == "\x00":
                index, _ = self.read_marker(j)
                raise self.fail(
                    index, j, "is inside $'...', which cannot take a value; use '...' or \"...\""
                )
            j += 2 if self.text[j] == "\\" else 1
        j = min(j + 1, stop)
        self.emit(self.text[i:j])
        return j

    def heredoc_operator(self, i: int, stop: int) -> int:
        text = self.text
        j = i + 2
        strip_tabs = text.startswith("-", j)
        j += strip_tabs
        while j < stop and text[j] in " \t":
            j += 1
        start, word, quoted = j, [], False
        while j < stop and text[j] not in _WORD_BREAK:
            ch = text[j]
            if ch in "'\"":
                quoted = True
                end = text.find(ch, j + 1, stop)
                end = stop if end < 0 else end
                word.append(text[j + 1 : end].replace("\\" + ch, ch))
                j = end + 1
            elif ch == "\\":
                quoted = True
                word.append(text[j + 1 : j + 2])
                j += 2
            else:
                word.append(ch)
                j += 1
        j = min(j, stop)
        inside = text.find("\x00", start, j)
        if inside >= 0:
            index, _ = self.read_marker(inside)
            raise self.fail(index, inside, "cannot be (part of) a heredoc delimiter")
        if j > start:
            self.pending.append(_Heredoc("".join(word), quoted, strip_tabs))
        self.emit(text[i:j])
        return j

    def heredoc_bodies(self, i: int, stop: int) -> int:
        """Read the bodies of the heredocs opened on the line that just ended."""
        pending, self.pending = self.pending, []
        for doc in pending:
            start = j = i
            while j < stop:  # find the delimiter line
                end = self.text.find("\n", j, stop)
                end = stop if end < 0 else end
                line = self.text[j:end]
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    break
                j = end + 1
            body_end = min(j, stop)
            if doc.quoted:
                found = self.text.find("\x00", start, body_end)
                if found >= 0:
                    index, _ = self.read_marker(found)
                    raise self.fail(
                        index,
                        found,
                        f"is in the body of a heredoc whose delimiter is quoted "
                        f"(<<'{doc.delimiter}'), where the shell expands nothing; unquote "
                        f"the delimiter (<<{doc.delimiter}) so the value can arrive",
                    )
                self.emit(self.text[start:body_end])
            else:
                self.scan(start, body_end, [_Frame("heredoc")])
            if body_end >= stop:
                return stop
            end = self.text.find("\n", body_end, stop)
            end = stop if end < 0 else end + 1
            self.emit(self.text[body_end:end])
            i = end
        return i


def place_values(
    text: str,
    values: list[str] | None,
    names: list[str],
    nonce: str,
    labels: list[str] | None = None,
) -> tuple[str, str]:
    """(script, display) for ``text`` whose markers stand for ``values`` (see the module).

    ``values=None`` checks a template before any value is known (``labels`` then name
    each marker's expression in errors). Raises :class:`ShellContextError`.
    """
    script, display = _Placer(text, values, names, labels, nonce).run()
    if "\x00" in script:  # pragma: no cover - every path above places or refuses
        raise ShellContextError("a {{ ... }} value stands where the shell cannot take one")
    return script, display
