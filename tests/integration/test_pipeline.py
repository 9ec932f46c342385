"""The whole path on both backends: DAG file -> scheduler -> leased worker -> results."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import Harness


def test_fan_out_fan_in_of_200_tasks_succeeds_with_one_try_each(harness, write_dag):
    write_dag(
        "wide.py",
        """
        from orchestrator import DAG, task

        with DAG("wide", schedule=None) as dag:
            @task
            def start(ctx):
                return 1

            @task
            def end(ctx):
                return sum(ctx.upstream(f"mid_{i}") for i in range(200))

            for i in range(200):
                def mid(ctx, i=i):
                    return ctx.upstream("start") + i
                start >> task(task_id=f"mid_{i}")(mid) >> end
        """,
    )
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("wide", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    assert run.state == "success"
    tis = harness.store.task_instances(run.run_id)
    assert len(tis) == 202
    assert {t.state for t in tis} == {"success"}
    assert {t.try_number for t in tis} == {1}
    assert harness.store.results(run.run_id, ["end"])["end"] == str(sum(1 + i for i in range(200)))


def test_upstream_results_and_shell_task_log(harness, write_dag, settings):
    write_dag(
        "etl.py",
        """
        from orchestrator import DAG, task

        with DAG("etl", schedule=None, params={"who": "world; echo INJECTED"}) as dag:
            @task
            def extract(ctx):
                ctx.log.info("extracting for %s", ctx.params["who"])
                return {"rows": 3}

            @task
            def load(ctx):
                return ctx.upstream("extract")["rows"] * 2

            say = dag.shell("say", "echo hello {{ params.who }} {{ ds }}")
            extract >> load >> say
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("etl", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "success"
    assert harness.store.results(run.run_id, ["load"]) == {"load": "6"}
    [try_] = harness.store.tries(run.run_id, "say")
    text = (Path(settings.log_dir) / try_.log_path).read_text()
    assert "hello world; echo INJECTED 2026-01-01" in text
    assert "\nINJECTED" not in text


def test_tries_run_by_one_child_each_log_only_to_their_own_file(store, clock, settings, write_dag):
    write_dag(
        "chatty.py",
        """
        from orchestrator import DAG, task

        with DAG("chatty", schedule=None) as dag:
            steps = []
            for i in range(4):
                def say(ctx, i=i):
                    ctx.log.info("line from step %s", i)
                    print(f"printed by step {i}")
                steps.append(task(task_id=f"step{i}")(say))
            steps[0] >> steps[1] >> steps[2] >> steps[3]
        """,
    )
    harness = Harness(store, settings, clock, concurrency=1)  # one child runs all four
    try:
        harness.parse()
        run = store.trigger_run("chatty", clock.now())
        assert harness.run_until_finished(run.run_id).state == "success"
    finally:
        harness.close()
    for i in range(4):
        [try_] = store.tries(run.run_id, f"step{i}")
        text = (Path(settings.log_dir) / try_.log_path).read_text()
        assert f"line from step {i}" in text and f"printed by step {i}" in text
        others = [j for j in range(4) if j != i]
        assert not any(f"step {j}" in text for j in others), text
