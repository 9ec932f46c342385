"""The state folder is made private (issue 24, item 10): what ``tighten`` changes, what
it leaves alone, and the warning it logs."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from orchestrator.state_folder import tighten


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_an_open_folder_is_tightened_with_a_warning(tmp_path: Path, caplog) -> None:
    state = tmp_path / "state"
    (state / "logs" / "etl").mkdir(parents=True)
    (state / "orchestrator.db").write_text("db")
    (state / "logs" / "etl" / "1.log").write_text("log")
    (state / "run.sh").write_text("#!/bin/sh\n")
    for folder in (state, state / "logs", state / "logs" / "etl"):
        folder.chmod(0o755)
    (state / "orchestrator.db").chmod(0o644)
    (state / "logs" / "etl" / "1.log").chmod(0o666)
    (state / "run.sh").chmod(0o755)
    with caplog.at_level(logging.WARNING, "orchestrator.state_folder"):
        changed = tighten(str(state))
    assert len(changed) == 6
    assert {mode(state), mode(state / "logs"), mode(state / "logs" / "etl")} == {0o700}
    assert mode(state / "orchestrator.db") == 0o600
    assert mode(state / "logs" / "etl" / "1.log") == 0o600
    assert mode(state / "run.sh") == 0o700  # the owner keeps what it had
    [record] = caplog.records
    assert "6 entries were readable by other users" in record.getMessage()
    assert str(state / "orchestrator.db") in record.getMessage()


def test_a_private_folder_is_left_alone_quietly(tmp_path: Path, caplog) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "secrets_key").write_text("k")
    (state / "secrets_key").chmod(0o600)
    with caplog.at_level(logging.WARNING):
        assert tighten(str(state)) == []
        assert tighten(str(tmp_path / "missing")) == []
    assert caplog.records == []


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o755)  # not by the umask, which a command run earlier may have set
    (outside / "shared.txt").write_text("x")
    (outside / "shared.txt").chmod(0o644)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "link").symlink_to(outside / "shared.txt")
    (state / "dirlink").symlink_to(outside)
    assert tighten(str(state)) == []
    assert mode(outside) == 0o755 and mode(outside / "shared.txt") == 0o644


def test_quiet_tightens_without_a_warning(tmp_path: Path, caplog) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    with caplog.at_level(logging.WARNING):
        assert tighten(str(state), quiet=True) == [str(state)]
    assert caplog.records == [] and mode(state) == 0o700


def test_make_private_dir_makes_every_new_folder_0700_whatever_the_umask(tmp_path: Path) -> None:
    from orchestrator.state_folder import make_private_dir

    before = os.umask(0o022)
    try:
        make_private_dir(str(tmp_path / "logs" / "etl" / "run"))
        make_private_dir(str(tmp_path / "logs" / "etl" / "run"))  # exists: nothing to do
    finally:
        os.umask(before)
    for path in (tmp_path / "logs", tmp_path / "logs" / "etl", tmp_path / "logs" / "etl" / "run"):
        assert mode(path) == 0o700, path
