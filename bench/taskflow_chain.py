"""TaskFlow chain: a 1 KiB result passed through a 100-task chain of calls (issue 25).

``t_001(t_000())``, ``t_002(t_001(...))``...: each task receives its upstream's result
as an argument (a JSON object of about 1 KiB: a stamp and a padding string) and returns
a new one. The figure is the latency from an upstream task's code returning to its
downstream task's code running, stamped inside the tasks, as ``chain`` measures it;
here the result travels through the claim into the argument, so the figure shows what
the TaskFlow call style costs over ``chain``.

    python bench/run.py --scenario taskflow --backend sqlite
"""

from __future__ import annotations

import statistics
import textwrap

from benchlib import figure, percentile, run_dag, setup  # bench/ is on sys.path


def taskflow_dag(length: int) -> str:
    return textwrap.dedent(
        f"""
        import time

        from orchestrator import DAG, task

        PAD = "x" * 1000  # with the stamp and the keys: about 1 KiB of JSON


        def step(previous=None):
            assert previous is None or len(previous["pad"]) == 1000
            return {{"at": time.time(), "pad": PAD}}


        with DAG("bench_taskflow", schedule=None) as dag:
            value = None
            for i in range({length}):
                made = task(task_id=f"t_{{i:03d}}")(step)
                value = made() if value is None else made(value)
        """
    )


def scenario(ctx) -> list:  # noqa: ANN001 - benchlib.Context
    length = ctx.args.length
    store, settings = setup(ctx, "bench_taskflow.py", taskflow_dag(length))
    try:
        run, wall = run_dag(ctx, store, settings, "bench_taskflow", "taskflow")
        order = [f"t_{i:03d}" for i in range(length)]
        results = store.results(run.run_id, order)
    finally:
        store.dispose()
    import json

    ran = {t: json.loads(results[t])["at"] for t in order}
    size = len(results[order[0]].encode())
    gaps = [(ran[down] - ran[up]) * 1000 for up, down in zip(order, order[1:], strict=False)]
    b = ctx.backend
    return [
        figure(b, "taskflow", "tasks", length, "tasks"),
        figure(b, "taskflow", "result_bytes", size, "bytes"),
        figure(b, "taskflow", "wall_s", wall, "s"),
        figure(b, "taskflow", "latency_median_ms", statistics.median(gaps), "ms"),
        figure(b, "taskflow", "latency_p95_ms", percentile(gaps, 95), "ms"),
    ]
