"""The DAG file text the processor stores with a version: capped, hashed whole."""

from __future__ import annotations

import hashlib

from orchestrator.authoring.loader import MAX_SOURCE_BYTES, read_source


def test_a_source_is_read_whole_up_to_the_limit(tmp_path):
    path = tmp_path / "etl.py"
    path.write_bytes(b"x = 1  # caf\xc3\xa9 \xff\n")
    source = read_source(str(path))
    assert source == {
        "text": "x = 1  # café \ufffd\n",
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "size": len(path.read_bytes()),
        "truncated": False,
    }


def test_a_big_source_is_cut_at_the_limit_and_hashed_whole(tmp_path):
    path = tmp_path / "big.py"
    raw = b"#" * MAX_SOURCE_BYTES + b"\n# the tail\x00\n"
    path.write_bytes(raw)
    source = read_source(str(path))
    assert source is not None
    assert len(source["text"]) == MAX_SOURCE_BYTES and "tail" not in source["text"]
    assert source["truncated"] and source["size"] == len(raw)
    assert source["sha256"] == hashlib.sha256(raw).hexdigest()


def test_no_nul_reaches_the_store_and_a_missing_file_has_no_source(tmp_path):
    path = tmp_path / "nul.py"
    path.write_bytes(b"a\x00b")
    assert read_source(str(path))["text"] == "a\ufffdb"
    assert read_source(str(tmp_path / "gone.py")) is None
