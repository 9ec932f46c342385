"""The worker with real task processes, on both backends: retries, timeouts, crashes."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest

LEASE = timedelta(seconds=30)


def _start(harness, dag_id: str) -> str:
    assert harness.parse().errors == 0
    run = harness.store.trigger_run(dag_id, harness.clock.now())
    harness.tick()
    return run.run_id


def test_retries_back_off_and_are_not_claimable_before_ready_at(harness, write_dag):
    store, clock, worker = harness.store, harness.clock, harness.worker
    write_dag(
        "flaky.py",
        """
        from orchestrator import DAG, task

        with DAG("flaky", schedule=None, retry_delay=10) as dag:
            @task(retries=3)
            def flaky(ctx):
                if ctx.try_number < 3:
                    raise RuntimeError(f"boom on try {ctx.try_number}")
                return ctx.try_number
        """,
    )
    run_id = _start(harness, "flaky")
    delays = []
    for n in (1, 2):
        worker.run_until_idle()
        ti = store.task_instance(run_id, "flaky")
        assert (ti.state, ti.try_number) == ("up_for_retry", n)
        assert f"boom on try {n}" in ti.error
        delay = ti.ready_at - clock.now()
        base = 10 * 2 ** (n - 1)  # exponential, plus a jitter of up to the base again
        assert timedelta(seconds=base) <= delay <= timedelta(seconds=2 * base)
        delays.append(delay)
        # not claimable a moment before ready_at, by this worker or anyone
        clock.set(ti.ready_at - timedelta(milliseconds=1))
        harness.tick()
        assert store.claim("probe", clock.now(), LEASE, limit=10) == []
        worker.run_until_idle()
        assert store.task_instance(run_id, "flaky").try_number == n
        clock.set(ti.ready_at)
    assert delays[1] >= delays[0]
    worker.run_until_idle()
    assert store.task_instance(run_id, "flaky").state == "success"
    harness.tick()
    assert store.get_run(run_id).state == "success"
    tries = store.tries(run_id, "flaky")
    assert [(t.try_number, t.state) for t in tries] == [
        (1, "failed"),
        (2, "failed"),
        (3, "success"),
    ]
    assert "boom on try 1" in tries[0].error and tries[2].error is None
    assert store.results(run_id, ["flaky"]) == {"flaky": "3"}
    assert len(store.events(kind="task_retry")) == 2


def test_exhausted_task_is_dead_lettered_and_downstream_follows_trigger_rules(harness, write_dag):
    write_dag(
        "doomed.py",
        """
        from orchestrator import DAG, task

        with DAG("doomed", schedule=None, retry_delay=1) as dag:
            @task(retries=1)
            def always_fails():
                raise RuntimeError("never works")

            @task
            def needs_success():
                return 1

            @task(trigger_rule="all_done")
            def runs_anyway():
                return "ran"

            always_fails >> [needs_success, runs_anyway]
        """,
    )
    assert harness.parse().errors == 0
    run = harness.store.trigger_run("doomed", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "failed"
    store = harness.store
    states = {t.task_id: t.state for t in store.task_instances(run.run_id)}
    assert states == {
        "always_fails": "failed",
        "needs_success": "upstream_failed",
        "runs_anyway": "success",
    }
    assert [t.state for t in store.tries(run.run_id, "always_fails")] == ["failed", "failed"]
    assert store.tries(run.run_id, "needs_success") == []
    [dead] = store.events(kind="task_dead_lettered")
    assert (dead.task_id, dead.try_number) == ("always_fails", 2)
    assert "never works" in dead.message
    assert store.results(run.run_id, ["runs_anyway"]) == {"runs_anyway": '"ran"'}


def test_timed_out_task_is_killed_and_recorded(harness, write_dag):
    write_dag(
        "slow.py",
        """
        import time
        from orchestrator import DAG, task

        with DAG("slow", schedule=None) as dag:
            @task(timeout=1)
            def sleepy():
                time.sleep(30)

            @task
            def quick():
                return "fine"
        """,
    )
    run_id = _start(harness, "slow")
    started = time.monotonic()
    harness.worker.run_until_idle(timeout=20)
    assert time.monotonic() - started < 15
    ti = harness.store.task_instance(run_id, "sleepy")
    assert ti.state == "failed" and "timed out" in ti.error
    [t] = harness.store.tries(run_id, "sleepy")
    assert t.state == "timeout" and t.end_date is not None
    assert harness.store.task_instance(run_id, "quick").state == "success"
    harness.tick()
    assert harness.store.get_run(run_id).state == "failed"


@pytest.mark.parametrize(
    ("how", "exit_status"),
    [("os._exit(3)", 3), ("os.kill(os.getpid(), signal.SIGKILL)", -9)],
)
def test_crashed_task_process_is_retried_by_a_fresh_child(
    harness, write_dag, tmp_path, how, exit_status
):
    pids = tmp_path / "pids"
    write_dag(
        "crash.py",
        f"""
        import os, signal
        from orchestrator import DAG, task

        with DAG("crash", schedule=None, retry_delay=1) as dag:
            @task(retries=1)
            def dies_once(ctx):
                with open({str(pids)!r}, "a") as f:
                    f.write(f"{{os.getpid()}}\\n")
                if ctx.try_number == 1:
                    {how}
                return ctx.try_number
        """,
    )
    run_id = _start(harness, "crash")
    harness.worker.run_until_idle()
    ti = harness.store.task_instance(run_id, "dies_once")
    assert ti.state == "up_for_retry"
    assert "the task process died" in ti.error
    [t] = harness.store.tries(run_id, "dies_once")
    assert (t.state, t.exit_status) == ("crashed", exit_status)

    run = harness.run_until_finished(run_id, step=timedelta(seconds=5))
    assert run.state == "success"
    tries = harness.store.tries(run_id, "dies_once")
    assert [(x.try_number, x.state) for x in tries] == [(1, "crashed"), (2, "success")]
    first, second = (int(p) for p in pids.read_text().split())
    assert first != second  # the replacement child ran the retry
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)


def test_a_python_task_reads_ds_in_its_dags_timezone(harness, write_dag):
    write_dag(
        "dates.py",
        """
        from orchestrator import DAG, task

        with DAG("dates", schedule=None, timezone="Asia/Tokyo") as dag:
            @task
            def stamp(ctx):
                return [ctx.ds, ctx.ds_nodash, ctx.ts]
        """,
    )
    assert harness.parse().errors == 0
    when = harness.clock.now().replace(hour=23, minute=30, second=0, microsecond=0)
    run = harness.store.trigger_run("dates", harness.clock.now(), logical_date=when)
    harness.tick()
    harness.worker.run_until_idle()
    local = when.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Tokyo"))
    assert harness.store.results(run.run_id, ["stamp"]) == {
        "stamp": f'["{local:%Y-%m-%d}", "{local:%Y%m%d}", "{local.isoformat()}"]'
    }
