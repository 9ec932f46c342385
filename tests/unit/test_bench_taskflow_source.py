"""bench/taskflow_chain.py's DAG: a 100-task chain built by TaskFlow calls, each task
taking its upstream's result as its argument."""

from __future__ import annotations

from pathlib import Path

from orchestrator.authoring.loader import load_file

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_taskflow_benchmarks_dag_is_a_chain_of_calls(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCH))
    import taskflow_chain

    path = tmp_path / "bench_taskflow.py"
    path.write_text(taskflow_chain.taskflow_dag(5))
    [dag] = load_file(str(path))
    assert {t: sorted(x.upstream_ids) for t, x in dag.tasks.items()} == {
        "t_000": [],
        "t_001": ["t_000"],
        "t_002": ["t_001"],
        "t_003": ["t_002"],
        "t_004": ["t_003"],
    }
    assert dag.tasks["t_003"].call_args[0].task is dag.tasks["t_002"]
