"""Setup and teardown tasks on both backends (issue 25, Airflow's semantics): the
teardown runs when its setup ran, whatever the work did; the run's state ignores a
teardown's failure unless ``on_failure_fail_dagrun``; a task in a setup's scope waits
for it even when it is not a direct upstream task; clearing a task clears its setup
and teardown, and the explainer says why a teardown waits."""

from __future__ import annotations

from datetime import timedelta

import pytest

LEASE = timedelta(seconds=30)

DAG_SOURCE = """
from orchestrator import DAG, Skip, setup, task, teardown

with DAG("st", schedule=None, params={{"fail": ""}}) as dag:
    @setup
    def create(ctx):
        if ctx.params["fail"] == "create":
            raise RuntimeError("no cluster today")
        if ctx.params["fail"] == "skip":
            raise Skip("nothing to set up")
        return "cluster-1"

    @task
    def work(ctx):
        if ctx.params["fail"] == "work":
            raise RuntimeError("the query broke")
        return ctx.upstream("create")

    @task
    def report(ctx):
        return ctx.upstream("work")

    @teardown{teardown_options}
    def delete(ctx):
        if ctx.params["fail"] == "delete":
            raise RuntimeError("cannot delete")
        return "deleted"

    create >> work >> report >> delete
    create >> delete
"""


def _run(harness, write_dag, fail: str, teardown_options: str = ""):
    write_dag("st.py", DAG_SOURCE.format(teardown_options=teardown_options))
    assert harness.parse().dags == 1
    run = harness.store.trigger_run("st", harness.clock.now(), conf={"fail": fail})
    run = harness.run_until_finished(run.run_id)
    states = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    return run, states


def test_all_good_runs_everything_and_succeeds(harness, write_dag):
    run, states = _run(harness, write_dag, "")
    assert run.state == "success"
    assert set(states.values()) == {"success"}
    assert harness.store.results(run.run_id, ["report", "delete"]) == {
        "report": '"cluster-1"',
        "delete": '"deleted"',
    }


def test_a_failing_work_task_still_gets_its_teardown_and_fails_the_run(harness, write_dag):
    run, states = _run(harness, write_dag, "work")
    assert states == {
        "create": "success",
        "work": "failed",
        "report": "upstream_failed",
        "delete": "success",  # cleaned up although the work failed
    }
    assert run.state == "failed"  # the run's state is the work's, not the teardown's


def test_a_failing_teardown_does_not_fail_the_run(harness, write_dag):
    run, states = _run(harness, write_dag, "delete")
    assert states["delete"] == "failed" and states["report"] == "success"
    assert run.state == "success"


def test_on_failure_fail_dagrun_makes_a_failing_teardown_fail_the_run(harness, write_dag):
    run, states = _run(harness, write_dag, "delete", "(on_failure_fail_dagrun=True)")
    assert states["delete"] == "failed"
    assert run.state == "failed"


def test_a_failed_setup_runs_neither_work_nor_teardown(harness, write_dag):
    run, states = _run(harness, write_dag, "create")
    assert states == {
        "create": "failed",
        "work": "upstream_failed",
        "report": "upstream_failed",
        "delete": "upstream_failed",  # nothing was set up: nothing to tear down
    }
    assert run.state == "failed"


def test_a_skipped_setup_skips_its_scope_and_its_teardown(harness, write_dag):
    run, states = _run(harness, write_dag, "skip")
    assert set(states.values()) == {"skipped"}
    assert run.state == "success"


def test_a_task_inside_the_scope_needs_the_setup_even_through_an_all_done(harness, write_dag):
    """``tidy`` (all_done) runs after ``work`` whatever ``work`` did, but the setup it
    works inside failed: Airflow marks it upstream_failed instead of running it."""
    write_dag(
        "scope.py",
        """
        from orchestrator import DAG, task

        with DAG("scope", schedule=None, params={"fail": True}) as dag:
            @task
            def create(ctx):
                if ctx.params["fail"]:
                    raise RuntimeError("no cluster")

            @task
            def work(ctx):
                return 1

            @task(trigger_rule="all_done")
            def tidy(ctx):
                return "ran"

            @task
            def delete(ctx):
                return None

            create.as_setup() >> work >> tidy >> delete.as_teardown(setups=create)
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("scope", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "failed"
    states = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    assert states == {
        "create": "failed",
        "work": "upstream_failed",
        "tidy": "upstream_failed",
        "delete": "upstream_failed",
    }
    harness.clock.advance(seconds=1)
    ok = harness.store.trigger_run("scope", harness.clock.now(), conf={"fail": False})
    assert harness.run_until_finished(ok.run_id).state == "success"
    assert harness.store.results(ok.run_id, ["tidy"]) == {"tidy": '"ran"'}


def test_an_always_task_in_the_scope_does_not_let_the_next_task_past_a_failed_setup(
    harness, write_dag
):
    """``always`` ignores setups (Airflow); the task after it, released by its success
    in the finishing transaction, must not be: its setup failed."""
    write_dag(
        "always.py",
        """
        from orchestrator import DAG, task

        with DAG("always", schedule=None) as dag:
            def broken():
                raise RuntimeError("no cluster")

            s = task(task_id="s")(broken).as_setup()
            a = task(task_id="a")(lambda: None)
            x = task(task_id="x", trigger_rule="always")(lambda: "ran")
            z = task(task_id="z")(lambda: "ran")
            t = task(task_id="t")(lambda: None)
            s >> a >> x >> z >> t.as_teardown(setups=s)
        """,
    )
    harness.parse()
    run = harness.store.trigger_run("always", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "failed"
    states = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    assert states == {
        "s": "failed",
        "a": "upstream_failed",
        "x": "success",
        "z": "upstream_failed",
        "t": "upstream_failed",
    }


def test_a_success_releases_nothing_whose_setup_still_runs(harness, write_dag):
    """``x`` (always) finishes while the setup still runs: ``z`` after it waits for the
    setup, in the finishing transaction too."""
    write_dag(
        "early.py",
        """
        from orchestrator import DAG, task

        with DAG("early", schedule=None) as dag:
            s = task(task_id="s")(lambda: None).as_setup()
            a = task(task_id="a")(lambda: None)
            x = task(task_id="x", trigger_rule="always")(lambda: None)
            z = task(task_id="z")(lambda: None)
            t = task(task_id="t")(lambda: None)
            s >> a >> x >> z >> t.as_teardown(setups=s)
        """,
    )
    harness.parse()
    store, clock = harness.store, harness.clock
    run = store.trigger_run("early", clock.now())
    harness.tick()  # starts the run: s queued
    harness.tick()  # x (always) released at once
    claims = {c.task_id: c for c in store.claim("w", clock.now(), LEASE, limit=5)}
    assert sorted(claims) == ["s", "x"]
    store.finish_success(claims["x"], "null", clock.now())
    assert store.task_instance(run.run_id, "z").state == "scheduled"
    harness.tick()
    assert store.task_instance(run.run_id, "z").state == "scheduled"
    store.finish_success(claims["s"], "null", clock.now())
    harness.tick()
    assert store.task_instance(run.run_id, "z").state == "queued"


def test_clearing_the_work_clears_its_setup_and_teardown_and_they_run_again(
    harness, write_dag, tmp_path
):
    flag = tmp_path / "fail-once"
    flag.write_text("x")
    write_dag(
        "again.py",
        f"""
        import os
        from orchestrator import DAG, setup, task, teardown

        with DAG("again", schedule=None) as dag:
            @setup
            def create(ctx):
                return ctx.try_number

            @task
            def work(ctx):
                if os.path.exists({str(flag)!r}):
                    raise RuntimeError("first time")
                return ctx.upstream("create")

            @teardown
            def delete(ctx):
                return ctx.try_number

            @task
            def unrelated(ctx):
                return None

            create >> work >> delete
            create >> delete
        """,
    )
    harness.parse()
    store, clock = harness.store, harness.clock
    run = store.trigger_run("again", clock.now())
    assert harness.run_until_finished(run.run_id).state == "failed"
    flag.unlink()
    cleared = store.clear_task(run.run_id, "work", clock.now())
    assert cleared == ["work", "create", "delete"]  # unrelated stays as it was
    assert store.get_run(run.run_id).state == "running"
    assert harness.run_until_finished(run.run_id).state == "success"
    tries = {t: [x.try_number for x in store.tries(run.run_id, t)] for t in ("create", "work")}
    assert tries == {"create": [1, 2], "work": [1, 2]}
    assert store.results(run.run_id, ["work", "delete"]) == {"work": "2", "delete": "2"}
    assert [x.try_number for x in store.tries(run.run_id, "unrelated")] == [1]
    assert store.clear_task(run.run_id, "create", clock.now()) == ["create", "delete"]


def test_the_finish_path_waits_for_an_indirect_setup_then_releases(harness, write_dag):
    """``b`` is two steps after the setup: a success of ``a`` releases it in the same
    transaction only because the setup succeeded too."""
    write_dag(
        "chain.py",
        """
        from orchestrator import DAG, task

        with DAG("chain", schedule=None) as dag:
            s = task(task_id="s")(lambda: None).as_setup()
            a = task(task_id="a")(lambda: None)
            b = task(task_id="b")(lambda: None)
            t = task(task_id="t")(lambda: None)
            s >> a >> b >> t.as_teardown(setups=s)
        """,
    )
    harness.parse()
    store, clock = harness.store, harness.clock
    run = store.trigger_run("chain", clock.now())
    harness.tick()
    for name in ("s", "a"):
        [claim] = store.claim("w", clock.now(), LEASE, limit=1)
        assert claim.task_id == name
        store.finish_success(claim, "null", clock.now())
    assert store.task_instance(run.run_id, "b").state == "queued"  # no scheduler tick
    [claim] = store.claim("w", clock.now(), LEASE, limit=1)
    store.finish_success(claim, "null", clock.now())
    assert store.task_instance(run.run_id, "t").state == "scheduled"  # the scheduler's
    facts = store.task_facts(run.run_id, "t", clock.now(), worker_stale_after=LEASE)
    assert facts.setups == ("s",)
    harness.tick()
    assert store.task_instance(run.run_id, "t").state == "queued"


@pytest.mark.parametrize("setup_state", ["running", "failed"])
def test_the_explainer_names_a_pending_or_failed_indirect_setup(harness, write_dag, setup_state):
    from orchestrator.scheduling.explain import explain_task

    write_dag(
        "why.py",
        """
        from orchestrator import DAG, task

        with DAG("why", schedule=None) as dag:
            s = task(task_id="s")(lambda: None).as_setup()
            other = task(task_id="other")(lambda: None)
            w = task(task_id="w")(lambda: None)
            t = task(task_id="t")(lambda: None)
            s >> t.as_teardown(setups=s)
            s >> other
            [other] >> w >> t
        """,
    )
    harness.parse()
    store, clock = harness.store, harness.clock
    run = store.trigger_run("why", clock.now())
    harness.tick()
    [claim] = store.claim("w", clock.now(), LEASE, limit=1)
    assert claim.task_id == "s"
    if setup_state == "failed":
        store.finish_failure(claim, "broken", 1, clock.now())
    facts = store.task_facts(run.run_id, "w", clock.now(), worker_stale_after=LEASE)
    assert [t for t, _ in facts.indirect_setups] == ["s"]
    text = " ".join(r.message for r in explain_task(facts))
    assert f"s ({setup_state})" in text
