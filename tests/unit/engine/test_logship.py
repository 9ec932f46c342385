"""The worker's log shipper on real files and a recording store: what it ships of a
try's log, the cap, retries after a failed write, and forgetting ended tries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orchestrator.engine.logship import PIECE_BYTES, SHIP_SLACK, LogShipper

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Recorder:
    def __init__(self) -> None:
        self.pieces: list = []
        self.fail = False

    def ship_log(self, pieces, now):
        if self.fail:
            raise OSError("connection refused\nmore detail")
        self.pieces += pieces
        return len(pieces)

    def shipped(self, key) -> bytes:
        ours = sorted((p for p in self.pieces if (p.ti_id, p.try_number) == key),
                      key=lambda p: p.seq)  # fmt: skip
        assert [p.seq for p in ours] == list(range(len(ours)))
        at = 0
        for p in ours:
            assert p.start_byte == at
            at += len(p.data)
        return b"".join(p.data for p in ours)


def test_new_bytes_are_shipped_in_order_and_an_ended_try_is_forgotten(tmp_path):
    store, path = Recorder(), tmp_path / "1.log"
    shipper = LogShipper(store, max_log_bytes=10 * 2**20)
    shipper.start(7, 1, str(path))
    assert shipper.ship(NOW, {(7, 1)}) == 0  # no file yet: nothing, no error
    path.write_bytes(b"first\n")
    assert shipper.ship(NOW, {(7, 1)}) == 6
    assert shipper.ship(NOW, {(7, 1)}) == 0  # nothing new: no write
    with path.open("ab") as f:
        f.write(b"x" * (PIECE_BYTES + 5))
    assert shipper.ship(NOW, set(), ended_only=True) > 0  # ended: the rest, then forgotten
    assert store.shipped((7, 1)) == path.read_bytes()
    assert len(shipper) == 0 and max(len(p.data) for p in store.pieces) <= PIECE_BYTES


def test_a_failed_write_moves_nothing_on_and_the_next_ship_sends_it(tmp_path, caplog):
    store, path = Recorder(), tmp_path / "1.log"
    shipper = LogShipper(store, max_log_bytes=1000)
    shipper.start(1, 2, str(path))
    path.write_bytes(b"abc")
    store.fail = True
    assert shipper.ship(NOW, {(1, 2)}) == 0
    assert "cannot ship 1 log piece(s) yet (connection refused); will retry" in caplog.text
    store.fail = False
    path.write_bytes(b"abcdef")
    assert shipper.ship(NOW, set()) == 6
    assert store.shipped((1, 2)) == b"abcdef"


def test_past_the_cap_one_marker_is_shipped_and_nothing_more(tmp_path):
    store, path = Recorder(), tmp_path / "1.log"
    shipper = LogShipper(store, max_log_bytes=100)
    shipper.start(3, 1, str(path))
    path.write_bytes(b"a" * (100 + SHIP_SLACK + 5000))
    shipper.ship(NOW, {(3, 1)})
    with path.open("ab") as f:
        f.write(b"#" * 1000)
    assert shipper.ship(NOW, set()) == 0
    data = store.shipped((3, 1))
    assert data.startswith(b"a" * (100 + SHIP_SLACK)) and b"#" not in data
    assert data.endswith(b"max_log_bytes + 65536); the rest stayed in the worker's log folder]\n")
    assert len(data) < 100 + SHIP_SLACK + 300


def test_the_commit_of_an_outcome_carries_the_prepared_pieces(tmp_path):
    store, path = Recorder(), tmp_path / "1.log"
    shipper = LogShipper(store, max_log_bytes=1000)
    shipper.start(5, 1, str(path))
    path.write_bytes(b"done\n")
    pieces = shipper.prepare(set(), ended_only=True)
    assert [p.data for p in pieces] == [b"done\n"] and len(shipper) == 1
    shipper.prepare(set(), ended_only=True)  # the commit failed: prepared again, same piece
    shipper.committed()
    assert len(shipper) == 0 and store.pieces == []  # the caller's commit stored them


@pytest.mark.parametrize("live", [True, False])
def test_ended_only_leaves_running_tries_alone(tmp_path, live):
    store = Recorder()
    shipper = LogShipper(store, max_log_bytes=1000)
    for n in (1, 2):
        (tmp_path / f"{n}.log").write_bytes(b"z" * n)
        shipper.start(n, 1, str(tmp_path / f"{n}.log"))
    running = {(1, 1)} if live else set()
    shipper.ship(NOW, running, ended_only=True)
    assert store.shipped((2, 1)) == b"zz"
    assert store.shipped((1, 1)) == (b"" if live else b"z")
