"""bench/limits.py and bench/compare.py (issue 28): the raw loops do claim and complete
every row exactly once, the engine's rates are held against the named limit, and a
comparison refuses what is not a commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_raw_sqlite_loops_finish_every_row(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import limits

    for batch in (1, limits.BATCH):
        assert limits.sqlite3_loop(120, batch) > 0
        assert limits.core_sqlite_loop(120, batch) > 0


def test_vs_limits_divides_each_engine_rate_by_the_reference(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import benchlib
    import limits

    monkeypatch.setattr(limits, "measure", lambda b, n, url: {"core_single": 500.0, "x": 9.0})
    figures = [benchlib.figure("sqlite", "wide", "tasks_per_s", 400.0, "tasks/s")]
    args = type("A", (), {"limits_count": 10, "pg_url": ""})()
    out = {(f.scenario, f.figure): f for f in benchlib.limit_figures("sqlite", figures, args)}
    ratio = out[("vs_limits", "wide_vs_core_single")]
    assert ratio.value == 0.8 and ratio.meets is False and ratio.target == ">= 1"
    assert out[("limits", "core_single")].value == 500.0


def test_compare_refuses_a_name_that_is_not_a_commit():
    done = subprocess.run(
        [sys.executable, str(BENCH / "compare.py"), "no-such-rev-xyz"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "'no-such-rev-xyz' is not a commit of this repository" in done.stderr
