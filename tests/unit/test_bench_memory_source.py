"""bench/memory.py writes 100 DAG files for standalone to parse: they must compile on
every day of the year (2026-12-02 written as ``datetime(2026, 12, 02)`` did not)."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def memory(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_memory", BENCH / "memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_memory", None)


@pytest.mark.parametrize(
    "today", [datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 8, tzinfo=UTC)]
)
def test_the_memory_benchmarks_dag_files_compile_whatever_the_date(memory, monkeypatch, today):
    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ANN001, ANN206
            return today

    monkeypatch.setattr(memory, "datetime", Frozen)
    source = memory.dag_source(7)
    compile(source, "mem_007.py", "exec")
    tomorrow = f"datetime({today.year}, {today.month}, {today.day + 1}, tzinfo=UTC)"
    assert tomorrow in source
