"""Skip, Fail, a shell task's skip_on_exit_code and the on_execute / on_success hooks,
end to end on both databases (issue 14 item 6)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from orchestrator.states import TaskState

DAG_SOURCE = """
import os
from orchestrator import DAG, Fail, Skip, task

MARKS = {marks!r}

def mark(what):
    def hook(ctx):
        with open(os.path.join(MARKS, f"{what}-{ctx.task_id}-{ctx.try_number}"), "w"):
            pass
    return hook

def broken_hook(ctx):
    raise RuntimeError("hook is broken")

with DAG("controls", schedule=None, default_retries=3, retry_delay=0) as dag:
    @task(on_execute=mark("execute"), on_success=mark("success"))
    def fine(ctx):
        return 1

    @task(on_execute=mark("execute"), on_success=mark("success"))
    def skips(ctx):
        raise Skip("nothing to do today")

    @task(on_success=broken_hook)
    def hook_fails(ctx):
        return 2

    @task
    def fails_now(ctx):
        raise Fail("bad schema: retrying will not help")

    @task
    def skip_on_retry(ctx):
        if ctx.try_number == 1:
            raise RuntimeError("flaky")
        raise Skip("second look: nothing to do")

    after_skip = dag.shell("after_skip", "true")
    sh_skip = dag.shell("sh_skip", "exit 99")
    sh_own = dag.shell("sh_own", "exit 3", skip_on_exit_code=3)
    sh_fail = dag.shell("sh_fail", "exit 99", skip_on_exit_code=None, retries=0)
    none_failed = dag.shell("none_failed", "true", trigger_rule="none_failed")
    all_skipped = dag.shell("all_skipped", "true", trigger_rule="all_skipped")
    skips >> after_skip
    [fine, skips] >> none_failed
    [skips, sh_skip] >> all_skipped
"""


def test_skip_fail_exit_codes_and_hooks(harness, write_dag, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    # the path is in the file (task processes come from a forkserver started once)
    write_dag("controls.py", DAG_SOURCE.replace("{marks!r}", repr(str(marks))))
    harness.parse()
    run = harness.store.trigger_run("controls", harness.clock.now())
    harness.run_until_finished(run.run_id, step=timedelta(seconds=2))
    tis = {t.task_id: t for t in harness.store.task_instances(run.run_id)}
    states = {k: t.state for k, t in tis.items()}
    assert states == {
        "fine": "success",
        "skips": "skipped",
        "hook_fails": "success",  # a hook's error never changes the outcome
        "fails_now": "failed",
        "skip_on_retry": "skipped",
        "after_skip": "skipped",  # all_success downstream of a skip
        "sh_skip": "skipped",
        "sh_own": "skipped",
        "sh_fail": "failed",
        "none_failed": "success",
        "all_skipped": "success",
    }
    # Fail: one try although three retries were left
    assert tis["fails_now"].try_number == 1
    fail_tries = harness.store.tries(run.run_id, "fails_now")
    assert [t.state for t in fail_tries] == ["failed"]
    assert "bad schema" in (tis["fails_now"].error or "")
    # Skip in a retry: the first try failed, the second skipped
    assert [t.state for t in harness.store.tries(run.run_id, "skip_on_retry")] == [
        "failed",
        "skipped",
    ]
    assert [t.state for t in harness.store.tries(run.run_id, "sh_skip")] == ["skipped"]
    assert harness.store.tries(run.run_id, "sh_skip")[0].exit_status == 99
    # hooks ran in the try's process, on_success only after a success
    assert sorted(p.name for p in marks.iterdir()) == [
        "execute-fine-1",
        "execute-skips-1",
        "success-fine-1",
    ]
    # the hook's traceback is in the try's log
    text = _log_of(harness, run.run_id, "hook_fails")
    assert "on_success raised" in text and "hook is broken" in text
    assert harness.store.get_run(run.run_id).state == "failed"  # fails_now is a leaf


def _log_of(harness, run_id: str, task_id: str) -> str:
    tries = harness.store.tries(run_id, task_id)
    return (Path(harness.settings.log_dir) / tries[-1].log_path).read_text()


def test_a_late_skip_after_losing_the_lease_is_fenced_out(harness, store, write_dag, clock):
    write_dag(
        "one.py",
        "from orchestrator import DAG, task\n"
        "with DAG('one', schedule=None) as dag:\n"
        "    @task\n"
        "    def t(ctx):\n"
        "        return 1\n",
    )
    harness.parse()
    run = store.trigger_run("one", clock.now())
    harness.tick()
    [claim] = store.claim("w1", clock.now(), timedelta(seconds=10), limit=1)
    clock.advance(timedelta(seconds=30))
    store.reap_expired(clock.now())  # the lease expired: queued again, try 1 lost
    assert store.finish_skip(claim, "too late", None, clock.now()) is None
    ti = store.task_instance(run.run_id, "t")
    assert ti.state != TaskState.SKIPPED
    kinds = [e.kind for e in store.events_after(0)]
    assert "stale_write_rejected" in kinds


TEST_SOURCE = """
from orchestrator import DAG, Fail, Skip, task

with DAG("tt", schedule=None) as dag:
    @task
    def skips(ctx):
        raise Skip("nothing")

    @task(retries=3)
    def fails(ctx):
        raise Fail("no")

    dag.shell("sh_skip", "exit 99")
    dag.shell("sh_fail", "exit 99", skip_on_exit_code=None)
"""


def test_tasks_test_treats_skip_as_success_and_fail_as_failure(settings, write_dag, capsys):
    from orchestrator.engine.tasktest import run_task_test

    write_dag("tt.py", TEST_SOURCE)
    assert run_task_test(settings, "tt", "skips", None, {}) == 0
    assert run_task_test(settings, "tt", "fails", None, {}) == 1
    assert run_task_test(settings, "tt", "sh_skip", None, {}) == 0
    assert run_task_test(settings, "tt", "sh_fail", None, {}) == 1
    out = capsys.readouterr().out
    assert "skipped: nothing" in out and "Fail raised: no" in out


BAD_GROUPS = {
    "dup_group.py": (
        "from orchestrator import DAG, TaskGroup, task\n"
        "with DAG('dup', schedule=None) as dag:\n"
        "    with TaskGroup('g'):\n"
        "        task(task_id='a')(lambda ctx: None)\n"
        "    with TaskGroup('g'):\n"
        "        pass\n",
        5,
        "duplicate task group 'g'",
    ),
    "bad_group.py": (
        "from orchestrator import DAG, TaskGroup\n"
        "with DAG('bad', schedule=None) as dag:\n"
        "    TaskGroup('no spaces')\n",
        3,
        "invalid group_id 'no spaces'",
    ),
}


def test_a_bad_task_group_is_an_import_error_naming_file_and_line(harness, write_dag):
    write_dag("fine.py", "from orchestrator import DAG\nDAG('fine', schedule=None)\n")
    for name, (source, _, _) in BAD_GROUPS.items():
        write_dag(name, source)
    harness.parse()
    errors = {Path(e.fileloc).name: e.message for e in harness.store.import_errors()}
    for name, (_, line, part) in BAD_GROUPS.items():
        assert f"{name}:{line}: " in errors[name] and part in errors[name], errors[name]
    assert [d.dag_id for d in harness.store.list_dags()] == ["fine"]  # the rest is stored
