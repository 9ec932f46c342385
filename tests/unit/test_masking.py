"""Masking secrets in a try's log (CappedLog), its error text and its result."""

from __future__ import annotations

import io
import json

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.engine.masking import MaskedStream, Masker, mask_outcome
from orchestrator.engine.tasklog import CappedLog

SECRET = "s3cr3t-Valu3"


def _log(tmp_path, masker, chunks, limit=1 << 30) -> str:
    path = tmp_path / "t" / "1.log"
    log = CappedLog(str(path), limit, masker)
    for chunk in chunks:
        log.write_bytes(chunk)
    log.end_of_output()
    log.write("after the end " + SECRET + "\n")  # the runner's own closing lines
    log.close()
    return path.read_text()


def test_a_secret_split_across_writes_is_masked(tmp_path):
    masker = Masker()
    masker.add(SECRET)
    data = f"a {SECRET} b {SECRET}".encode()
    text = _log(tmp_path, masker, [data[i : i + 1] for i in range(len(data))])
    assert text == "a *** b ***after the end ***\n"


@given(st.lists(st.integers(0, 60), max_size=6), st.sampled_from(["x", "s3c", "", "\n"]))
def test_any_split_masks_every_occurrence(tmp_path_factory, cuts, filler):
    masker = Masker()
    masker.add(SECRET)
    masker.add("another-one")
    data = f"{filler}{SECRET}{filler}another-one{SECRET[:5]}{filler}".encode()
    points = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    text = _log(tmp_path_factory.mktemp("m"), masker, chunks)
    assert SECRET not in text and "another-one" not in text
    assert text.startswith(f"{filler}***{filler}***{SECRET[:5]}{filler}")


def test_spellings_and_short_values(tmp_path):
    masker = Masker()
    masker.add("p@ss word/1")
    masker.add("ab")  # too short to mask
    out = masker.mask('url=pg://u:p%40ss%20word%2F1@h json="p@ss word/1" ab')
    assert out == 'url=pg://u:***@h json="***" ab'
    assert masker.mask_value({"k": ["x p@ss word/1"], "p@ss word/1": 1}) == {
        "k": ["x ***"],
        "***": 1,
    }
    assert mask_outcome(masker, {"ok": False, "error": "bad p@ss word/1"})["error"] == "bad ***"


def test_without_secrets_bytes_pass_untouched(tmp_path):
    path = tmp_path / "1.log"
    log = CappedLog(str(path), 1 << 30, Masker())
    log.write_bytes(b"abc")
    log.write_bytes(b"\xff\xfe")
    log.close()
    assert path.read_bytes() == b"abc\xff\xfe"


def test_what_task_processes_import_stays_light():
    """Lookups and masking add no database or crypto import to task processes (a try's
    first second goes to the task, not to importing SQLAlchemy)."""
    import subprocess
    import sys

    code = (
        "import sys, orchestrator.engine.runner, orchestrator.engine.task_secrets, "
        "orchestrator.authoring.context; "
        "print(sorted(m for m in ('sqlalchemy', 'cryptography') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_result_is_masked_as_json_text_and_stays_json():
    import json

    masker = Masker()
    masker.add('quo"te-secret')
    masker.add('", "')  # a "secret" that spans JSON syntax: masked in the values instead
    result = json.dumps({"a": 'x quo"te-secret', "b": ["ok"]})
    masked = mask_outcome(masker, {"ok": True, "result": result})["result"]
    assert json.loads(masked) == {"a": "x ***", "b": ["ok"]}


def test_values_of_four_characters_are_masked_and_shorter_ones_are_not():
    """Issue 31: docs/secrets.md's threshold, at its edge (after stripping spaces), for
    a whole secret and for each line of a multi-line one."""
    masker = Masker()
    for value in ("abcd", "xyz", "  uv  ", "wxyz\nqrs\nlmno"):
        masker.add(value)
    assert masker.mask("abcd xyz uv wxyz qrs lmno") == "*** xyz uv *** qrs ***"
    assert not Masker().__bool__()
    short = Masker()
    short.add("abc")
    assert not short and short.mask("abc") == "abc"


def test_a_secret_printed_as_json_or_repr_is_masked_whole():
    """Issue 31: the JSON- and repr-escaped spellings are the whole secret, first
    character included (a spelling one character short leaves that character in the
    log)."""
    masker = Masker()
    secret = 'pa"ss\nword'
    masker.add(secret)
    assert masker.mask(json.dumps({"pw": secret})) == '{"pw": "***"}'
    assert masker.mask(repr(secret)) == "'***'"
    assert masker.mask(repr([secret])) == "['***']"
    quoted = Masker()
    quoted.add("it's-secret")
    assert quoted.mask(repr("it's-secret")) == '"***"'


def test_what_is_not_text_is_left_as_it_is():
    masker = Masker()
    masker.add(SECRET)
    assert masker.mask(None) is None
    assert masker.mask(b"raw " + SECRET.encode()) == b"raw " + SECRET.encode()
    assert masker.mask(42) == 42


def test_the_masked_stream_holds_back_only_what_may_begin_a_secret():
    """Issue 31: MaskedStream (what `tasks test` prints a try's output through) had no
    test of its own. Text that cannot begin a secret is written at once; the end of a
    write that may begin one waits for the next write (the second of two "s" begins
    it here), or for finish (the end of the output), which writes it as it is; flush
    alone does not release it (issue 24 item 4)."""
    out = io.StringIO()
    masker = Masker()
    masker.add("s3cret!")
    stream = MaskedStream(out, masker)
    assert stream.writable()
    assert stream.write("call sx ") == len("call sx ")
    assert out.getvalue() == "call sx "  # "sx" begins no secret
    stream.write("pw=s")
    assert out.getvalue() == "call sx pw="
    stream.write("s3c")
    assert out.getvalue() == "call sx pw=s"
    stream.write("ret! ok ")
    assert out.getvalue() == "call sx pw=s*** ok "
    stream.write("tail s3")
    stream.flush()
    assert out.getvalue() == "call sx pw=s*** ok tail "
    stream.finish()
    assert out.getvalue() == "call sx pw=s*** ok tail s3"
    plain = io.StringIO()
    MaskedStream(plain, Masker()).write("no secret known: s3cret!")
    assert plain.getvalue() == "no secret known: s3cret!"


def test_the_masked_stream_holds_back_each_source_apart():
    """`tasks test` feeds one stream from two sources: Python's sys.stdout (``write``)
    and the pipe of fds 1 and 2 (``write_bytes``, from a pump thread). A secret's first
    half held back from the pipe must never be written out in front of the next print;
    it was, in clear, when both sources shared one buffer (seen in CI under load)."""
    out = io.StringIO()
    masker = Masker()
    masker.add("tok-5e3c9a7b1d2f")
    stream = MaskedStream(out, masker)
    stream.write_bytes(b"tok-5e3c")  # the pump read half of an os.write'd secret
    stream.write("printed tok-5e3c9a7b1d2f\n")  # then a print, before the rest arrives
    stream.write_bytes(b"9a7b1d2f\n")  # the pipe's other half
    stream.finish()
    assert "tok-5e" not in out.getvalue(), out.getvalue()
    assert out.getvalue().count("***") == 2
