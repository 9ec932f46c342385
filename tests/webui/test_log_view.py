"""The log viewer's pure parts: lines, levels, ANSI colours, search, pages (issue 27)."""

from __future__ import annotations

import io

import pytest

from webui.log_view import level_of, render_lines, search, whole_lines
from webui.logs import count_lines, log_page, raw_blocks, whole_blocks


def test_lines_are_numbered_and_levelled_and_continuations_keep_the_level():
    text = (
        "2026-01-01 00:00:00,000 INFO starting\n"
        "2026-01-01 00:00:01,000 ERROR boom\n"
        "Traceback (most recent call last):\n"
        "2026-01-01 00:00:02,000 WARNING careful\n"
        "2026-01-01 00:00:03,000 DEBUG detail\n"
    )
    html = str(render_lines(text, 41))
    assert html.count('class="log-line"') == 5
    levels = [part.split('"')[0] for part in html.split('data-level="')[1:]]
    assert levels == ["info", "error", "error", "warning", "debug"]
    numbers = [part.split('"')[0] for part in html.split('data-n="')[1:]]
    assert numbers == ["41", "42", "43", "44", "45"]


def test_level_words_count_only_at_the_head_of_a_line():
    assert level_of("x" * 80 + " ERROR late", "info") == "info"
    assert level_of("WARN: disk", "info") == "warning"
    assert level_of("CRITICAL down", "info") == "error"
    assert level_of("INFORMATION", "debug") == "debug"  # a whole word only


def test_ansi_colours_become_classes_and_text_stays_escaped():
    html = str(render_lines("\x1b[1;31m<script>alert(1)</script>\x1b[0m plain\n"))
    assert '<span class="ansi-fg-1 ansi-bold">&lt;script&gt;alert(1)&lt;/script&gt;</span>' in html
    assert "<script>" not in html and "\x1b" not in html
    assert html.endswith(" plain</span>\n</span>")


def test_a_colour_runs_on_to_the_next_line_and_other_escapes_are_dropped():
    html = str(render_lines("\x1b[32mgreen\nstill green\x1b[39m\n\x1b]0;title\x07\x1b[2Kdone\n"))
    assert '<span class="ansi-fg-2">still green</span>' in html
    assert "title" not in html and ">done</span>" in html


def test_hostile_escape_codes_never_become_markup():
    html = str(render_lines('\x1b[38;5;196m"><img src=x onerror=alert(1)>\x1b[999;m\n'))
    assert "<img" not in html and "&lt;img" in html and "&#34;&gt;" in html


def test_search_is_a_plain_case_insensitive_substring():
    text = "alpha\nBETA (x+\nbeta\n\x1b[31mbeta\x1b[0m red\n"
    assert search(text, "beta", first_line=5) == [
        (6, "BETA (x+"), (7, "beta"), (8, "beta red")
    ]  # fmt: skip
    assert search(text, "(x+", first_line=1) == [(2, "BETA (x+")]  # no regex error
    assert search(text, ".*") == []  # a pattern is just text
    assert len(search("hit\n" * 50, "hit", limit=3)) == 3


def test_a_search_text_that_would_hang_a_regex_is_just_text():
    text = "a" * 5000 + "!\nthe pattern (a+)+$ itself\n"
    assert search(text, "(a+)+$") == [(2, "the pattern (a+)+$ itself")]  # found literally


def test_whole_lines_while_running():
    assert whole_lines("a\nb", finished=False) == "a\n"
    assert whole_lines("a\nb", finished=True) == "a\nb"


def _log(n: int) -> bytes:
    return b"".join(f"line {i}\n".encode() for i in range(1, n + 1))


def test_the_last_page_starts_on_a_whole_line_with_its_number():
    data = _log(1000)
    page = log_page(io.BytesIO(data), len(data), finished=True, limit=100)
    assert page.text.startswith("line ") and page.text.endswith("line 1000\n")
    first = int(page.text.split("\n")[0].split()[1])
    assert page.first_line == first
    assert data[page.offset - 1 : page.offset] == b"\n"  # not half a line
    assert page.next_offset == len(data) and page.size == len(data)


def test_a_page_starting_right_after_a_line_end_keeps_that_line():
    data = b"aaaa\nbbbb\n"
    page = log_page(io.BytesIO(data), len(data), finished=True, limit=5)
    assert page.text == "bbbb\n" and page.first_line == 2 and page.offset == 5


def test_an_earlier_page_ends_where_the_shown_lines_start():
    data = _log(300)
    f = io.BytesIO(data)
    last = log_page(f, len(data), finished=True, limit=200)
    earlier = log_page(f, len(data), finished=True, before=last.offset, line=last.first_line)
    assert earlier.next_offset == last.offset
    assert earlier.text.endswith(f"line {last.first_line - 1}\n")
    assert earlier.first_line == int(earlier.text.split()[1])
    counted = log_page(f, len(data), finished=True, before=last.offset, limit=200)
    assert counted.first_line == int(counted.text.split()[1])  # counted, not given


def test_following_a_running_try_returns_whole_lines_only():
    data = b"one\ntwo\nthr"
    page = log_page(io.BytesIO(data), len(data), finished=False, offset=0, line=1)
    assert page.text == "one\ntwo\n" and page.next_offset == 8
    later = log_page(io.BytesIO(data + b"ee\n"), len(data) + 3, finished=False, offset=8, line=3)
    assert later.text == "three\n" and later.first_line == 3
    done = log_page(io.BytesIO(data), len(data), finished=True, offset=8, line=3)
    assert done.text == "thr"  # the try ended: its last line is whole as it is


def test_a_multibyte_character_is_never_cut_at_a_page_start():
    data = ("é" * 40 + "\n").encode() * 20
    page = log_page(io.BytesIO(data), len(data), finished=True, limit=100)
    assert "\ufffd" not in page.text


def test_counting_and_whole_blocks_over_many_blocks():
    data = _log(200_000)  # 2.5 MB: three blocks
    assert count_lines(io.BytesIO(data), len(data)) == 200_000
    blocks = list(whole_blocks(io.BytesIO(data)))
    assert len(blocks) > 1 and all(t.endswith("\n") for t, _ in blocks)
    assert [first for _, first in blocks][1] == blocks[0][0].count("\n") + 1
    assert b"".join(raw_blocks(io.BytesIO(data), len(data))) == data
    assert b"".join(raw_blocks(io.BytesIO(data + b"more"), len(data))) == data


@pytest.mark.parametrize("query", ["line 199999", "LINE 7\n"[:6]])
def test_search_over_blocks_finds_line_numbers(query):
    data = _log(200_000)
    found = [
        hit
        for text, first in whole_blocks(io.BytesIO(data))
        for hit in search(text, query, first_line=first, limit=10)
    ]
    assert found and all(query.lower() in line.lower() for _, line in found)
    assert all(line == f"line {n}" for n, line in found)
