"""The state folder's record of SQLite databases (``databases.json``) under processes
that start together: a scheduler and a worker both record at start. Neither may fail
(the shared ``.tmp`` file made one crash with FileNotFoundError) or lose the other's
entry."""

from __future__ import annotations

import json
import multiprocessing

from orchestrator.store.core.identity import record_database


def _record_many(state_dir: str, who: int, go) -> None:  # noqa: ANN001
    go.wait()
    for n in range(25):
        record_database(state_dir, f"sqlite:///{state_dir}/db-{who}-{n}.sqlite")


def test_processes_recording_at_once_all_succeed_and_keep_every_entry(tmp_path):
    ctx = multiprocessing.get_context("fork")
    go = ctx.Event()
    procs = [ctx.Process(target=_record_many, args=(str(tmp_path), w, go)) for w in range(6)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 6
    recorded = json.loads((tmp_path / "databases.json").read_text())["databases"]
    assert len(recorded) == 6 * 25
    assert not list(tmp_path.glob("*.tmp"))  # no temporary file left behind
