"""Cluster mode on the real PostgreSQL: several schedulers and workers as real
processes, killed, stopped and cut off for real. Nothing runs twice; nothing is lost."""

from __future__ import annotations

import random
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.store import Store
from tests.system.cluster import cluster, pid_of, wait_for

pytestmark = [pytest.mark.system, pytest.mark.postgres]

FAST = {
    "ORCHESTRATOR_LEASE_SECONDS": "2",
    "ORCHESTRATOR_HEARTBEAT_SECONDS": "0.5",
    "ORCHESTRATOR_SCHEDULER_INTERVAL": "0.2",
    "ORCHESTRATOR_WORKER_POLL_SECONDS": "0.5",
    "ORCHESTRATOR_PARSE_INTERVAL": "60",
}


@pytest.fixture
def pg_settings(pg_database, tmp_path, dags_dir):
    from orchestrator.settings import Settings
    from tests.conftest import _truncate_pg

    _truncate_pg(pg_database)
    return Settings.load(
        {},
        cwd=str(tmp_path),
        database_url=pg_database,
        dags_folder=str(dags_dir),
        state_dir=str(tmp_path / "state"),
        lease_seconds=2,
        heartbeat_seconds=0.5,
    )


@pytest.fixture
def pg_store(pg_settings):
    store = Store(pg_settings.database_url)
    yield store
    store.dispose()


def effect_dag(name: str, n: int, effects: Path, sleep: float) -> str:
    return f"""
import os, time
from orchestrator import DAG, task

EFFECTS = {str(effects)!r}

with DAG("{name}", schedule=None, default_retries=5, retry_delay=0.2) as dag:
    def work(ctx):
        with open(os.path.join(EFFECTS, "executions.log"), "a") as f:
            f.write(ctx.idempotency_key + "\\n")
        time.sleep({sleep})
        # the side effect, protected by the idempotency key: at most once per task
        path = os.path.join(EFFECTS, ctx.idempotency_key.replace("/", "+"))
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        return None

    for i in range({n}):
        task(task_id=f"t{{i}}")(work)
"""


def test_scheduler_failover_creates_every_fire_time_exactly_once(
    pg_settings, pg_store, write_dag, tmp_path
):
    """3 schedulers, a DAG firing every second, the leader SIGKILLed repeatedly."""
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    write_dag(
        "every_second.py",
        f"""
        from datetime import datetime
        from orchestrator import DAG, task

        with DAG("every_second", schedule="* * * * * *", misfire="backfill",
                 start_date=datetime.fromisoformat({start.isoformat()!r}),
                 max_active_runs=1000) as dag:
            @task
            def noop(ctx):
                return None
        """,
    )
    failovers: list[float] = []
    with cluster(pg_settings, tmp_path, **FAST) as c:
        scheds = [c.start("scheduler") for _ in range(3)]
        wait_for(lambda: pg_store.leader(), "a leader", 30)
        for _ in range(3):
            time.sleep(2.5)
            holder, epoch, _ = pg_store.leader()
            victim = next(p for p in scheds if p.pid == pid_of(holder))
            killed_at = time.monotonic()
            c.kill(victim)
            scheds.remove(victim)
            wait_for(
                lambda epoch=epoch: (lead := pg_store.leader()) and lead[1] > epoch,
                "a new leader",
                15,
            )
            failovers.append(time.monotonic() - killed_at)
            scheds.append(c.start("scheduler"))
        end = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
        expected = int((end - start).total_seconds()) + 1

        def caught_up():
            runs = pg_store.list_runs("every_second", limit=100000)
            return {r.logical_date for r in runs if start <= r.logical_date <= end}

        got = wait_for(lambda: len(caught_up()) >= expected and caught_up(), "catch-up", 30)
        runs = pg_store.list_runs("every_second", limit=100000)
    assert got == {start + timedelta(seconds=i) for i in range(expected)}
    per_time = [r.logical_date for r in runs]
    assert len(per_time) == len(set(per_time)), "a fire time got two runs"
    lease, tick = 2.0, 0.2
    print(f"failover seconds per kill: {[round(f, 2) for f in failovers]}")
    # the standby takes over once the dead leader's lease expires, at its next tick;
    # 1 s of slack for starting processes on a busy 2-core machine
    assert max(failovers) < lease + tick + 1.0, failovers


def test_killing_workers_at_random_loses_nothing_and_repeats_no_effect(
    pg_settings, pg_store, write_dag, tmp_path
):
    """4 workers on a 500-task DAG, SIGKILLed at random every few seconds."""
    effects = tmp_path / "effects"
    effects.mkdir()
    write_dag("chaos.py", effect_dag("chaos", 500, effects, 0.05))
    rng = random.Random(7)
    with cluster(pg_settings, tmp_path, **FAST) as c:
        c.start("scheduler")
        workers = [c.start("worker", "--concurrency", "4") for _ in range(4)]
        wait_for(lambda: pg_store.list_dags(), "the DAG to be parsed", 30)
        run = pg_store.trigger_run("chaos", datetime.now(UTC))
        deadline = time.monotonic() + 150
        kills = 0
        while time.monotonic() < deadline:
            if pg_store.get_run(run.run_id).state in ("success", "failed"):
                break
            time.sleep(2.0)
            victim = rng.choice(workers)
            c.kill(victim)
            kills += 1
            workers.remove(victim)
            workers.append(c.start("worker", "--concurrency", "4"))
        wait_for(
            lambda: pg_store.get_run(run.run_id).state in ("success", "failed"),
            "the run to finish" + c.logs()[-500:],
            60,
        )
    tis = pg_store.task_instances(run.run_id)
    assert {t.state for t in tis} == {"success"}, c.logs()
    keys = {f"chaos/{run.run_id}/t{i}".replace("/", "+") for i in range(500)}
    assert {p.name for p in effects.iterdir() if p.name != "executions.log"} == keys
    executions = (effects / "executions.log").read_text().split()
    assert set(executions) == {k.replace("+", "/") for k in keys}
    print(f"{kills} workers killed; {len(executions)} executions for 500 tasks")


def test_a_stopped_worker_past_its_lease_is_fenced_out(pg_settings, pg_store, write_dag, tmp_path):
    """SIGSTOP a worker past its lease, then SIGCONT: its report is rejected."""
    effects = tmp_path / "effects"
    effects.mkdir()
    write_dag("slow.py", effect_dag("slow", 1, effects, 3.0))
    with cluster(pg_settings, tmp_path, **FAST) as c:
        c.start("scheduler")
        frozen = c.start("worker")
        wait_for(lambda: pg_store.list_dags(), "the DAG to be parsed", 30)
        run = pg_store.trigger_run("slow", datetime.now(UTC))
        wait_for(lambda: (effects / "executions.log").exists(), "the first try to start", 30)
        c.kill(frozen, signal.SIGSTOP)
        c.start("worker")  # takes over once the frozen worker's lease expires
        wait_for(lambda: pg_store.get_run(run.run_id).state == "success", "the run", 40)
        c.kill(frozen, signal.SIGCONT)
        wait_for(
            lambda: pg_store.events(run_id=run.run_id, kind="stale_write_rejected"),
            "the frozen worker's late report to be rejected",
            20,
        )
    tries = pg_store.tries(run.run_id, "t0")
    assert [t.try_number for t in tries] == [1, 2]
    assert (tries[0].state, tries[0].lost_reason) == ("lost", "lease_expired")
    assert tries[1].state == "success"
    assert tries[0].worker != tries[1].worker
    ti = pg_store.task_instance(run.run_id, "t0")
    assert ti.state == "success" and ti.owner == tries[1].worker


def test_postgres_restart_mid_run_loses_and_repeats_nothing(
    pg_settings, pg_store, write_dag, tmp_path
):
    """Restart the PostgreSQL server under a running DAG: every process reconnects."""
    import shutil
    import subprocess

    from tests.conftest import REQUIRE_PG

    if shutil.which("pg_ctlcluster") is None or not Path("/etc/postgresql").is_dir():
        if REQUIRE_PG:
            pytest.fail(
                "pg_ctlcluster is needed to restart the server (ORCHESTRATOR_REQUIRE_POSTGRES=1)"
            )
        pytest.skip("pg_ctlcluster is not available to restart the server")
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[-1]
    effects = tmp_path / "effects"
    effects.mkdir()
    write_dag("steady.py", effect_dag("steady", 40, effects, 0.3))
    env = dict(FAST, ORCHESTRATOR_LEASE_SECONDS="15", ORCHESTRATOR_HEARTBEAT_SECONDS="1")
    with cluster(pg_settings, tmp_path, **env) as c:
        c.start("scheduler")
        c.start("worker", "--concurrency", "2")
        c.start("worker", "--concurrency", "2")
        wait_for(lambda: pg_store.list_dags(), "the DAG to be parsed", 30)
        run = pg_store.trigger_run("steady", datetime.now(UTC))
        wait_for(lambda: len(list(effects.iterdir())) > 6, "some tasks to finish", 30)
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
            check=True,
            timeout=60,
        )
        pg_store.engine.dispose()

        def finished() -> bool:
            try:
                return pg_store.get_run(run.run_id).state in ("success", "failed")
            except Exception:  # noqa: BLE001 - the server may still be starting
                return False

        wait_for(finished, "the run to finish after the restart", 90)
    tis = pg_store.task_instances(run.run_id)
    assert {t.state for t in tis} == {"success"}, c.logs()
    done = {p.name for p in effects.iterdir() if p.name != "executions.log"}
    assert len(done) == 40


def test_a_pool_of_three_holds_with_eight_workers_claiming(
    pg_settings, pg_store, write_dag, tmp_path
):
    """8 worker processes race for 24 tasks in a 3-slot pool: never more than 3 run."""
    write_dag(
        "pooled.py",
        """
        import time
        from orchestrator import DAG, task

        with DAG("pooled", schedule=None) as dag:
            def nap(ctx):
                time.sleep(0.4)
            for i in range(24):
                task(task_id=f"t{i}", pool="three")(nap)
        """,
    )
    pg_store.set_pool("three", 3, datetime.now(UTC))
    samples: list[int] = []
    with cluster(pg_settings, tmp_path, **FAST) as c:
        c.start("scheduler")
        for _ in range(8):
            c.start("worker", "--concurrency", "2")
        wait_for(lambda: pg_store.list_dags(), "the DAG to be parsed", 30)
        run = pg_store.trigger_run("pooled", datetime.now(UTC))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            tis = pg_store.task_instances(run.run_id)
            samples.append(sum(t.state == "running" for t in tis))
            if all(t.state == "success" for t in tis):
                break
            time.sleep(0.05)
        wait_for(lambda: pg_store.get_run(run.run_id).state == "success", c.logs(), 20)
    print(f"{len(samples)} samples; running counts seen: {sorted(set(samples))}")
    assert max(samples) <= 3
    assert max(samples) == 3  # the pool was used to the full, not starved
