"""Explainer facts from a real store, dead letters, /metrics and history retention."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from orchestrator.cli import main
from orchestrator.observability.retention import clean
from orchestrator.scheduling.explain import explain_dag, explain_task

STALE = timedelta(seconds=30)
CHAIN = """
from orchestrator import DAG, task

with DAG("chain", schedule=None, max_active_runs=1) as dag:
    @task
    def first():
        raise RuntimeError("first broke")

    @task
    def second():
        return 2

    first >> second
"""


def _why(store, run_id, task_id, now):
    return explain_task(store.task_facts(run_id, task_id, now, worker_stale_after=STALE))


def test_why_dead_letter_and_retry(harness, write_dag, store, clock):
    write_dag("chain.py", CHAIN)
    harness.parse()
    run = store.trigger_run("chain", clock.now())
    queued = store.trigger_run("chain", clock.now() + timedelta(seconds=1))
    harness.tick()
    reason, no_worker = _why(store, queued.run_id, "first", clock.now())
    assert reason.code == "run_queued" and reason.facts["holders"] == [run.run_id]
    assert no_worker.code == "no_live_worker"
    (reason,) = _why(store, run.run_id, "first", clock.now())
    assert reason.code == "no_live_worker"  # the worker has not registered yet
    codes = [r.code for r in _why(store, run.run_id, "second", clock.now())]
    assert codes == ["upstream_waiting", "no_live_worker"]
    harness.run_until_finished(run.run_id)
    (reason,) = _why(store, run.run_id, "first", clock.now())
    assert reason.code == "dead_lettered" and "first broke" in reason.facts["error"]
    assert [t.task_id for t in store.dead_letters("chain")] == ["first"]
    assert store.retry_dead_letter(run.run_id, "first", clock.now()) == ["first", "second"]
    assert store.get_run(run.run_id).state == "running"
    assert store.task_instance(run.run_id, "second").state == "scheduled"
    assert store.task_instance(run.run_id, "first").max_tries == 2
    assert store.events(run_id=run.run_id, kind="task_retried")
    harness.tick()
    assert store.task_instance(run.run_id, "first").state == "queued"
    with pytest.raises(Exception, match="not dead-lettered"):
        store.retry_dead_letter(run.run_id, "first", clock.now())


def test_why_leased_by_worker(harness, write_dag, store, clock, tmp_path):
    write_dag(
        "hang.py",
        """
        import time
        from orchestrator import DAG, task

        with DAG("hang", schedule=None) as dag:
            @task
            def sleepy():
                time.sleep(30)
        """,
    )
    harness.parse()
    run = store.trigger_run("hang", clock.now())
    harness.tick()
    harness.worker.tick(clock.now())
    (reason,) = _why(store, run.run_id, "sleepy", clock.now())
    assert reason.code == "leased" and reason.facts["owner"] == "test-worker"
    assert reason.facts["last_heartbeat"] is not None
    (reason,) = _why(store, run.run_id, "sleepy", clock.now() + timedelta(minutes=5))
    assert reason.code == "lease_expired"


def test_dags_why(harness, write_dag, store, clock):
    write_dag(
        "h.py",
        """
        from datetime import datetime, timezone
        from orchestrator import DAG, task

        with DAG("h", schedule="@hourly", start_date=datetime(2025, 12, 31, tzinfo=timezone.utc)) as dag:
            @task
            def t():
                pass
        """,
    )
    harness.parse()
    clock.advance(minutes=5)
    codes = [r.code for r in explain_dag(store.dag_facts("h", clock.now()))]
    assert codes == ["no_leader"]
    harness.tick()
    reasons = explain_dag(store.dag_facts("h", clock.now()))
    assert [r.code for r in reasons] == ["misfire_decision", "run_exists"]
    assert "coalesced" in reasons[0].message
    store.set_paused("h", True, clock.now())
    clock.advance(hours=1)
    harness.tick()
    codes = [r.code for r in explain_dag(store.dag_facts("h", clock.now()))]
    assert codes == ["dag_paused"]


def test_metrics_scrape(harness, write_dag, store, clock, settings):
    from webui import create_app

    write_dag("chain.py", CHAIN)
    harness.parse()
    run = store.trigger_run("chain", clock.now())
    harness.run_until_finished(run.run_id)
    app = create_app(settings, store, clock=clock, login_required=False)
    response = app.test_client().get("/metrics")
    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.get_data(as_text=True))}

    def sample(name, **labels):
        family = families[name]
        return next(
            s.value for s in family.samples
            if s.name.startswith(name) and all(s.labels.get(k) == v for k, v in labels.items())
        )  # fmt: skip

    assert sample("orchestrator_task_instances", state="failed") == 1
    assert sample("orchestrator_task_instances", state="upstream_failed") == 1
    assert sample("orchestrator_dag_runs", state="failed") == 1
    assert sample("orchestrator_task_tries", outcome="started") == 1
    assert sample("orchestrator_task_tries", outcome="failed") == 1
    assert sample("orchestrator_scheduler_leader_up") == 1
    assert sample("orchestrator_import_errors") == 0
    latency = families["orchestrator_release_to_start_seconds"]
    count = next(s.value for s in latency.samples if s.name.endswith("_count"))
    assert count == 1
    assert "orchestrator_queue_depth" in families and "orchestrator_alerts" in families


def test_db_clean_deletes_old_history_but_never_active_runs(
    harness, write_dag, store, clock, settings
):
    write_dag("chain.py", CHAIN)
    harness.parse()
    old = store.trigger_run("chain", clock.now())
    harness.run_until_finished(old.run_id)
    log = Path(settings.log_dir) / store.tries(old.run_id, "first")[0].log_path
    assert log.is_file()
    clock.advance(days=100)
    active = store.trigger_run("chain", clock.now() - timedelta(days=99))  # old date, active
    harness.tick()
    dry = clean(store, settings.log_dir, clock.now(), timedelta(days=90), dry_run=True)
    assert dry["runs"] == 1 and dry["task_instances"] == 2 and dry["tries"] == 1
    assert store.get_run(old.run_id)  # a dry run deletes nothing
    done = clean(store, settings.log_dir, clock.now(), timedelta(days=90), batch=1)
    assert done["runs"] == 1 and done["tries"] == 1 and done["log_files"] == 1
    assert done["events"] >= 2
    assert not log.exists() and not os.path.exists(log.parent.parent)
    assert [r.run_id for r in store.list_runs("chain")] == [active.run_id]
    assert store.events(run_id=old.run_id) == []


def test_cli_commands(harness, write_dag, store, clock, settings, capsys):
    write_dag("chain.py", CHAIN)
    harness.parse()
    run = store.trigger_run("chain", clock.now())
    harness.run_until_finished(run.run_id)
    common = ["--database-url", settings.database_url, "--state-dir", settings.state_dir]
    assert main(["tasks", "why", run.run_id, "second", *common]) == 0
    assert "upstream_failed" in capsys.readouterr().out
    assert main(["tasks", "failed", "chain", *common]) == 0
    assert "first broke" in capsys.readouterr().out
    assert main(["alerts", "list", "--json", *common]) == 0
    assert capsys.readouterr().out.strip() == "[]"
    assert main(["dags", "why", "chain", *common]) == 0
    assert "no schedule" in capsys.readouterr().out
    assert main(["db", "clean", "--older-than", "3650d", "--dry-run", *common]) == 0
    assert "would delete: 0 runs" in capsys.readouterr().out
    assert main(["tasks", "retry", run.run_id, "first", *common]) == 0
    assert "reset first, second" in capsys.readouterr().out
