"""``tasks logs`` helpers: the last N lines found backwards, control characters escaped."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.cli import logview
from orchestrator.cli.logview import escape_controls, stream_log, tail_offset


@given(
    lines=st.lists(st.text(alphabet="ab\n", max_size=12), max_size=30),
    n=st.integers(0, 40),
    chunk=st.integers(1, 9),
)
def test_tail_offset_finds_the_last_lines(lines, n, chunk):
    data = "".join(lines).encode()
    old, logview.CHUNK = logview.CHUNK, chunk  # small blocks: lines cross block edges
    try:
        got = data[tail_offset(io.BytesIO(data), n) :]
    finally:
        logview.CHUNK = old
    expected = b"".join(data.splitlines(keepends=True)[-n:]) if n else b""
    assert got == expected


def test_escape_controls_keeps_text_newlines_and_tabs():
    text = "naïve\tcafé ✓\nnext\n"
    assert escape_controls(text) == text
    assert escape_controls("\x1b[2J\x00\r\x7f\x9b\u202e") == r"\x1b[2J\x00\x0d\x7f\x9b\u202e"


@pytest.mark.parametrize("escape", [True, False])
def test_stream_log_escapes_across_chunks(tmp_path, monkeypatch, escape):
    monkeypatch.setattr(logview, "CHUNK", 3)
    path = tmp_path / "1.log"
    path.write_bytes("é\x1b[31m✓\n".encode() + b"\xff tail\n")
    out = io.BytesIO()
    stream_log(str(path), out, escape=escape)
    if escape:
        assert out.getvalue().decode() == "é\\x1b[31m✓\n\\xff tail\n"
    else:
        assert out.getvalue() == path.read_bytes()
