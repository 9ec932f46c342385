"""The issue-3 commands: backfill, backfill status/cancel/list, schedule preview,
dags trigger --conf/--logical-date; bad input is refused and changes nothing."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.cli import main
from orchestrator.cli.backfill import follow, progress_line
from tests.helpers import Harness

BERLIN = """
from datetime import datetime
from orchestrator import DAG, task

with DAG("nightly", schedule="0 2 * * *", timezone="Europe/Berlin", misfire="coalesce",
         start_date=datetime(2026, 1, 1), params={"n": 1, "name": "x"}) as dag:
    @task
    def only(ctx):
        return ctx.params["n"]
"""


@pytest.fixture
def cli(settings, monkeypatch, write_dag):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    monkeypatch.setenv("ORCHESTRATOR_BACKFILL_MAX_RUNS", "40")
    write_dag("nightly.py", BERLIN)
    assert main(["dags", "parse"]) == 0
    return lambda *argv: main(list(argv))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--start", "2026-02-10", "--end", "2026-02-01"), "--end 2026-02-01"),
        (("--start", "2026-13-01", "--end", "2026-02-01"), "--start: '2026-13-01' is not a date"),
        (("--start", "2026-01-01", "--end", "2026-12-31"), "more than 40 fire times"),
        (("--start", "2026-01-01"), "--start and --end are both required"),
        (("--start", "2026-01-01", "--end", "2026-01-02", "--reset", "--rerun-failed"), "exclude"),
    ],
)
def test_backfill_bad_input_is_refused_and_creates_nothing(cli, capsys, store, argv, message):
    assert cli("backfill", "nightly", *argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("orchestrator: error: ") and message in err
    assert store.list_runs("nightly") == [] and store.list_backfills() == []


def test_backfill_unknown_dag(cli, capsys):
    assert cli("backfill", "nope", "--start", "2026-01-01", "--end", "2026-01-02") == 1
    assert "no DAG with dag_id 'nope'" in capsys.readouterr().err


def test_backfill_dry_run_then_create_without_waiting(cli, capsys, store):
    argv = ("backfill", "nightly", "--start", "2026-03-28", "--end", "2026-03-30")
    assert cli(*argv, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "2026-03-29T03:00:00+02:00" in out  # 02:00 does not exist that night
    assert "dry run: 3 fire time(s)" in out and store.list_runs("nightly") == []
    assert cli(*argv, "--no-wait", "--max-active-runs", "1", "--reverse") == 0
    out = capsys.readouterr().out
    assert "3 run(s) created" in out and "backfill status 1" in out
    assert {r.run_type for r in store.list_runs("nightly")} == {"backfill"}
    assert cli(*argv, "--no-wait") == 0  # idempotent
    assert "0 run(s) created, 0 cleared, 3 existing left alone" in capsys.readouterr().out
    assert cli("backfill", "cancel", "1") == 0
    assert "3 queued run(s) cancelled" in capsys.readouterr().out
    assert cli("backfill", "list", "--json") == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows[1]["state"] == "cancelled" and rows[1]["runs"] == {"cancelled": 3}
    assert rows[2]["total"] == 3 and rows[2]["runs"] == {}  # it adopted nothing
    assert cli("backfill", "cancel", "99") == 1
    assert "no backfill with id 99" in capsys.readouterr().err


def test_follow_shows_progress_and_fails_when_a_run_failed(store, settings, clock, write_dag):
    write_dag(
        "half.py",
        """
        from datetime import UTC, datetime, timedelta
        from orchestrator import DAG, task

        with DAG("half", schedule=timedelta(hours=1), start_date=datetime(2026, 1, 1, tzinfo=UTC)) as dag:
            @task
            def only(ctx):
                if ctx.logical_date.hour == 1:
                    raise RuntimeError("boom")
        """,
    )
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        spec = store.current_spec("half")
        times = [datetime(2026, 1, 1, h, tzinfo=UTC) for h in range(3)]
        record, _ = store.create_backfill(
            "half",
            [(t, spec.schedule.data_interval(t)) for t in times],
            clock.now(),
            start=times[0],
            end=times[-1],
            max_active_runs=3,
        )

        def fake_sleep(_seconds):  # the scheduler and a worker make progress instead
            harness.tick()
            harness.worker.run_until_idle()
            harness.tick()
            clock.advance(timedelta(seconds=1))

        out = io.StringIO()
        assert follow(store, record.id, sleep=fake_sleep, out=out) == 1
    finally:
        harness.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[--------------------] 0/3 runs done, 0 failed")
    assert lines[-1].startswith("[####################] 3/3 runs done, 1 failed")


def test_follow_on_ctrl_c_says_how_to_follow_or_cancel(store, settings, clock, write_dag):
    write_dag("nightly.py", BERLIN)
    Harness(store, settings, clock).parse()
    spec = store.current_spec("nightly")
    t = datetime(2026, 1, 1, 1, tzinfo=UTC)
    record, _ = store.create_backfill(
        "nightly",
        [(t, spec.schedule.data_interval(t))],
        clock.now(),
        start=t,
        end=t,
        max_active_runs=1,
    )

    def interrupted(_seconds):
        raise KeyboardInterrupt

    out = io.StringIO()
    assert follow(store, record.id, sleep=interrupted, out=out) == 130
    text = out.getvalue()
    assert f"orchestrator backfill status {record.id}" in text
    assert f"orchestrator backfill cancel {record.id}" in text
    assert store.get_backfill(record.id).state == "running"  # the backfill goes on
    assert "ETA" in progress_line(store.get_backfill(record.id), 1.0)


def test_schedule_preview_marks_dst_shifts(cli, capsys):
    assert cli("schedule", "preview", "nightly", "--start", "2026-03-27", "--count", "4") == 0
    out = capsys.readouterr().out
    assert (
        "2026-03-29T03:00:00+02:00  2026-03-29T01:00:00+00:00  DST shift: UTC+01:00 -> UTC+02:00"
        in out
    )
    assert cli("schedule", "preview", "nightly", "--start", "2026-03-27", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["fire_times"]) == 10 and data["misfire"] == "coalesce"
    assert data["missed"]["missed"] > 0 and data["missed"]["run"] == 1  # coalesce: one run
    assert cli("schedule", "preview", "nightly", "--count", "0") == 2  # a usage error


def test_trigger_with_conf_and_logical_date(cli, capsys, store):
    assert (
        cli(
            "dags",
            "trigger",
            "nightly",
            "--conf",
            '{"n": 2}',
            "--logical-date",
            "2026-03-29T02:30",
            "--json",
        )
        == 0
    )
    run = json.loads(capsys.readouterr().out)
    assert run["logical_date"] == "2026-03-29T01:00:00+00:00"  # read in Europe/Berlin
    assert run["conf"] == {"n": 2}
    # a conf breaking a param's rule is a wrong argument: exit 2 (issue 25)
    assert cli("dags", "trigger", "nightly", "--conf", '{"name": 3}') == 2
    err = capsys.readouterr().err
    assert "param 'name' must be a string" in err
    assert cli("dags", "trigger", "nightly", "--logical-date", "yesterday") == 1
    assert "--logical-date: 'yesterday' is not a date" in capsys.readouterr().err
    assert cli("dags", "trigger", "nightly", "--conf", "[1]") == 1
    assert len(store.list_runs("nightly")) == 1
