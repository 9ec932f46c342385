"""Broken DAG files on both backends: each becomes exactly one clear import error
record, while healthy DAGs next to them keep being stored, scheduled and run."""

from __future__ import annotations

import os
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers import Harness

HEALTHY = """
    from orchestrator import DAG, task

    with DAG("healthy", schedule=None) as dag:
        @task
        def extract(ctx):
            return 21

        @task
        def double(ctx):
            return ctx.upstream("extract") * 2

        extract >> double
"""

TZ_DAG = "from datetime import UTC, datetime\nfrom orchestrator import DAG, task\n"

# name -> (source, [expected message parts]); "{line}" is the line holding "# <- here"
BROKEN: dict[str, tuple[str, list[str]]] = {
    "syntax_error.py": (
        """
        from orchestrator import DAG

        def broken(:  # <- here
            pass
        """,
        ["syntax_error.py:{line}: SyntaxError:"],
    ),
    "name_error.py": (
        """
        from orchestrator import DAG

        with DAG("name_error") as dag:
            value = undefined_name + 1  # <- here
        """,
        ["name_error.py:{line}: NameError: name 'undefined_name' is not defined"],
    ),
    "zero_division.py": (
        """
        def helper():
            return 1 / 0  # <- here

        RATIO = helper()
        """,
        ["zero_division.py:{line}: ZeroDivisionError: division by zero"],
    ),
    "missing_module.py": (
        """
        import os
        import no_such_module_for_orchestrator_tests  # <- here
        """,
        [
            "missing_module.py:{line}: ModuleNotFoundError: "
            "No module named 'no_such_module_for_orchestrator_tests'"
        ],
    ),
    "infinite_loop.py": (
        """
        while True:
            pass
        """,
        ["infinite_loop.py: importing took longer than 3s (parse_timeout) and was stopped"],
    ),
    "sys_exit.py": (
        """
        import sys
        sys.exit(3)  # <- here
        """,
        ["sys_exit.py:{line}: the file called sys.exit(3) while being imported"],
    ),
    "os_exit.py": (
        """
        import os
        os._exit(1)
        """,
        ["os_exit.py: the interpreter crashed while importing this file (exited with code 1)"],
    ),
    "kill_9.py": (
        """
        import os
        os.kill(os.getpid(), 9)
        """,
        ["kill_9.py: the interpreter crashed", "killed by signal SIGKILL"],
    ),
    "segfault.py": (
        """
        import ctypes
        ctypes.string_at(0)
        """,
        ["segfault.py: the interpreter crashed", "killed by signal SIGSEGV"],
    ),
    "cycle.py": (
        """
        from orchestrator import DAG

        with DAG("cycle") as dag:
            a = dag.shell("a", "true")  # <- here
            b = dag.shell("b", "true")
            a >> b >> a
        """,
        ["cycle.py:{line}: DAG 'cycle' has a cycle: a -> b -> a"],
    ),
    "duplicate_task.py": (
        """
        from orchestrator import DAG

        with DAG("duplicate_task") as dag:
            dag.shell("same", "true")
            dag.shell("same", "false")  # <- here
        """,
        ["duplicate_task.py:{line}: duplicate task_id 'same' in DAG 'duplicate_task'"],
    ),
    "unknown_dependency.py": (
        """
        from orchestrator import DAG

        with DAG("unknown_dependency") as dag:
            load = dag.shell("load", "true")
            load << "extrct"  # <- here
        """,
        [
            "unknown_dependency.py:{line}: DAG 'unknown_dependency': dependency 'extrct' >> "
            "'load' names unknown task 'extrct'"
        ],
    ),
    "bad_cron.py": (
        TZ_DAG
        + textwrap.dedent(
            """
        DAG("bad_cron", schedule="0 25 * * *", start_date=datetime(2026, 1, 1, tzinfo=UTC))  # <- here
        """
        ),
        ["bad_cron.py:{line}: DAG 'bad_cron': bad cron expression '0 25 * * *'", "hour"],
    ),
    "bad_timezone.py": (
        TZ_DAG
        + textwrap.dedent(
            """
        DAG("bad_timezone", schedule="@daily", timezone="Europe/Atlantis",  # <- here
            start_date=datetime(2026, 1, 1))
        """
        ),
        ["bad_timezone.py:{line}: DAG 'bad_timezone': unknown timezone 'Europe/Atlantis'"],
    ),
    # (a naive start_date used to be an error here; it is now read in the DAG's timezone,
    # see test_a_naive_start_date_is_read_in_the_dags_timezone)
    "id_with_newline.py": (
        TZ_DAG
        + textwrap.dedent(
            """
        with DAG("nl_id\\n") as dag:  # <- here
            pass
        """
        ),
        ["id_with_newline.py:{line}: invalid dag_id 'nl_id\\n'"],
    ),
    "task_id_with_newline.py": (
        TZ_DAG
        + textwrap.dedent(
            """
        with DAG("fine") as dag:
            dag.shell("t\\n", "true")  # <- here
        """
        ),
        ["task_id_with_newline.py:{line}: invalid task_id 't\\n'"],
    ),
    "end_before_start.py": (
        TZ_DAG
        + textwrap.dedent(
            """
        DAG(  # <- here
            "end_before_start",
            schedule="@daily",
            start_date=datetime(2026, 1, 1, tzinfo=UTC),
            end_date=datetime(2025, 1, 1, tzinfo=UTC),
        )
        """
        ),
        [
            "end_before_start.py:{line}: DAG 'end_before_start': end_date "
            "2025-01-01T00:00:00+00:00 is before start_date 2026-01-01T00:00:00+00:00"
        ],
    ),
    "twice_in_file.py": (
        """
        from orchestrator import DAG

        first = DAG("twice")
        first.shell("a", "true")
        second = DAG("twice")  # <- here
        second.shell("b", "true")
        """,
        ["twice_in_file.py:{line}: dag_id 'twice' is defined twice in this file (first at line"],
    ),
    "bad_template.py": (
        """
        from orchestrator import DAG

        with DAG("bad_template") as dag:
            dag.shell("say", "echo {{ params.who ")  # <- here
        """,
        ["bad_template.py:{line}: task 'say': bad command template"],
    ),
}


def source_and_line(source: str) -> tuple[str, int | None]:
    text = textwrap.dedent(source)
    for number, line in enumerate(text.splitlines(), start=1):
        if "# <- here" in line:
            return text, number
    return text, None


def rewrite(path: Path, source: str) -> None:
    """Write a new version of a DAG file with a visibly newer mtime."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(textwrap.dedent(source))
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


def errors_by_name(store) -> dict[str, str]:
    return {Path(e.fileloc).name: e.message for e in store.import_errors()}


@pytest.fixture
def harness(store, settings, clock):
    h = Harness(store, settings.with_(parse_timeout=3), clock)
    yield h
    h.close()


def run_healthy(harness) -> None:
    run = harness.store.trigger_run("healthy", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "success"
    assert harness.store.results(run.run_id, ["double"]) == {"double": "42"}
    harness.clock.advance(timedelta(minutes=1))


def test_each_broken_file_is_one_clear_error_and_the_healthy_dag_runs(harness, write_dag):
    write_dag("healthy.py", HEALTHY)
    write_dag(
        "noisy.py",
        """
        import sys
        from orchestrator import DAG

        for i in range(20000):
            print("chatty line", i, "x" * 80)
            print("and on stderr", i, file=sys.stderr)
        with DAG("noisy") as dag:
            dag.shell("quiet", "true")
        """,
    )
    write_dag(
        "no_dag.py",
        """
        def helper(x):
            return x * 2

        CONSTANT = helper(21)
        """,
    )
    expected = {}
    for name, (source, parts) in BROKEN.items():
        text, line = source_and_line(source)
        (Path(harness.settings.dags_folder) / name).write_text(text)
        expected[name] = [p.format(line=line) for p in parts]
    assert len(expected) >= 12

    result = harness.parse()
    assert result.errors == len(BROKEN)
    assert result.dags == 2

    records = harness.store.import_errors()
    assert len(records) == len(BROKEN)  # exactly one record per broken file
    by_name = errors_by_name(harness.store)
    assert set(by_name) == set(BROKEN)
    for record in records:
        assert record.fileloc == str(Path(harness.settings.dags_folder) / Path(record.fileloc).name)
    for name, parts in expected.items():
        for part in parts:
            assert part in by_name[name], f"{name}: {part!r} not in {by_name[name]!r}"
        assert "\n" not in by_name[name].strip(), by_name[name]  # one line, the details in tb
    assert (
        "Traceback"
        in {r.fileloc: r for r in records}[
            str(Path(harness.settings.dags_folder) / "name_error.py")
        ].traceback
    )

    assert [d.dag_id for d in harness.store.list_dags()] == ["healthy", "noisy"]
    run_healthy(harness)

    # an unchanged folder is not parsed again, and the errors stay
    again = harness.parse()
    assert again.parsed == 0
    assert errors_by_name(harness.store) == by_name


def test_same_dag_id_in_two_files_second_file_gets_the_error(harness, write_dag):
    write_dag("healthy.py", HEALTHY)
    harness.parse()
    copy = write_dag(
        "copy.py",
        """
        from orchestrator import DAG

        with DAG("other_ok") as ok:
            ok.shell("x", "true")
        with DAG("healthy") as dag:  # <- here
            dag.shell("impostor", "false")
        """,
    )
    _, line = source_and_line(copy.read_text())
    result = harness.parse()
    assert result.errors == 1
    [record] = harness.store.import_errors()
    assert record.fileloc == str(copy)
    assert f"copy.py:{line}: dag_id 'healthy' is already defined in" in record.message
    assert record.message.endswith("healthy.py")
    dag = harness.store.get_dag("healthy")
    assert Path(dag.fileloc).name == "healthy.py"
    assert set(harness.store.current_spec("healthy").tasks) == {"extract", "double"}
    assert [d.dag_id for d in harness.store.list_dags()] == ["healthy"]  # copy.py stored nothing
    run_healthy(harness)

    # the first file goes away: the second file's definition takes over
    (Path(harness.settings.dags_folder) / "healthy.py").unlink()
    harness.parse()
    assert harness.store.import_errors() == []
    dag = harness.store.get_dag("healthy")
    assert dag.is_active and Path(dag.fileloc).name == "copy.py"
    assert set(harness.store.current_spec("healthy").tasks) == {"impostor"}
    assert {d.dag_id for d in harness.store.list_dags()} == {"healthy", "other_ok"}


def test_fixing_a_broken_file_clears_its_error_and_adds_its_dag(harness, write_dag):
    path = write_dag("later.py", "from orchestrator import DAG\nDAG('later', schedule='@nope')\n")
    harness.parse()
    [record] = harness.store.import_errors()
    assert "later.py:2: DAG 'later': unknown schedule preset '@nope'" in record.message
    assert harness.store.list_dags() == []

    rewrite(path, HEALTHY.replace('"healthy"', '"later"'))
    result = harness.parse()
    assert (result.parsed, result.errors, result.dags) == (1, 0, 1)
    assert harness.store.import_errors() == []
    assert [d.dag_id for d in harness.store.list_dags()] == ["later"]


def test_a_file_that_breaks_keeps_its_last_good_dag_and_shows_the_error(harness, write_dag):
    path = write_dag("healthy.py", HEALTHY)
    harness.parse()
    good_version = harness.store.get_dag("healthy").version_hash

    broken = textwrap.dedent(HEALTHY) + "\nraise RuntimeError('oops, half-edited')\n"
    rewrite(path, broken)
    result = harness.parse()
    assert result.errors == 1
    [record] = harness.store.import_errors()
    line = len(broken.splitlines())
    assert f"healthy.py:{line}: RuntimeError: oops, half-edited" in record.message
    dag = harness.store.get_dag("healthy")
    assert dag.is_active and dag.version_hash == good_version
    assert set(harness.store.current_spec("healthy").tasks) == {"extract", "double"}

    # a broken file that is then deleted takes its error with it and its DAG goes inactive
    path.unlink()
    result = harness.parse()
    assert harness.store.import_errors() == []
    assert result.removed == 1
    assert harness.store.list_dags() == []


def test_a_changed_file_is_parsed_again_and_new_runs_use_the_new_tasks(harness, write_dag):
    path = write_dag("healthy.py", HEALTHY)
    harness.parse()
    first = harness.store.trigger_run("healthy", harness.clock.now())
    assert harness.run_until_finished(first.run_id).state == "success"

    rewrite(
        path,
        textwrap.dedent(HEALTHY)
        + textwrap.dedent(
            """
        dag.shell("announce", "echo {{ params.who }}", retries=0) << double
        dag.params["who"] = "everyone"
        """
        ),
    )
    harness.clock.advance(timedelta(minutes=5))
    result = harness.parse()
    assert (result.parsed, result.dags, result.errors) == (1, 1, 0)
    second = harness.store.trigger_run("healthy", harness.clock.now())
    assert harness.run_until_finished(second.run_id).state == "success"
    assert {t.task_id for t in harness.store.task_instances(first.run_id)} == {"extract", "double"}
    assert {t.task_id for t in harness.store.task_instances(second.run_id)} == {
        "extract",
        "double",
        "announce",
    }


def test_a_deleted_files_dag_becomes_inactive_and_gets_no_new_runs(harness, write_dag):
    path = write_dag(
        "hourly.py",
        """
        from datetime import UTC, datetime, timedelta
        from orchestrator import DAG

        with DAG("hourly", schedule=timedelta(hours=1), misfire="backfill",
                 start_date=datetime(2026, 1, 1, tzinfo=UTC)) as dag:
            dag.shell("tick", "true")
        """,
    )
    write_dag("healthy.py", HEALTHY)
    harness.parse()
    harness.tick()
    harness.clock.advance(timedelta(hours=1))
    harness.tick()
    assert len(harness.store.list_runs("hourly")) == 2

    path.unlink()
    result = harness.parse()
    assert result.removed == 1
    dag = harness.store.get_dag("hourly")
    assert not dag.is_active
    assert [d.dag_id for d in harness.store.list_dags()] == ["healthy"]
    for _ in range(5):
        harness.clock.advance(timedelta(hours=1))
        harness.tick()
    assert len(harness.store.list_runs("hourly")) == 2
    kinds = [e.kind for e in harness.store.events(dag_id="hourly")]
    assert "dag_removed" in kinds
    run_healthy(harness)

    # the file comes back: the DAG is active again and scheduling resumes
    write_dag(
        "hourly.py",
        """
        from datetime import UTC, datetime, timedelta
        from orchestrator import DAG

        with DAG("hourly", schedule=timedelta(hours=1), misfire="coalesce",
                 start_date=datetime(2026, 1, 1, tzinfo=UTC)) as dag:
            dag.shell("tick", "true")
        """,
    )
    harness.parse()
    assert harness.store.get_dag("hourly").is_active
    harness.tick()
    runs = harness.store.list_runs("hourly")
    assert len(runs) == 3  # the missed hours coalesce into one run for the latest
    assert runs[0].logical_date == harness.clock.now().replace(minute=0, second=0)


def test_a_naive_start_date_is_read_in_the_dags_timezone(harness, write_dag):
    # written the way Airflow, Dagster and Prefect tutorials write it; this file used to
    # be an import error ("start_date ... is naive")
    write_dag(
        "airflow_style.py",
        """
        from datetime import datetime
        from orchestrator import DAG

        with DAG("airflow_style", schedule="@daily", start_date=datetime(2026, 1, 1)) as dag:
            dag.shell("t", "true")

        with DAG("berlin_style", schedule="@daily", timezone="Europe/Berlin",
                 start_date=datetime(2026, 1, 1)) as dag:
            dag.shell("t", "true")
        """,
    )
    result = harness.parse()
    assert (result.dags, result.errors) == (2, 0) and harness.store.import_errors() == []
    harness.clock.set(datetime(2026, 1, 1, 0, 30, tzinfo=UTC))
    harness.tick()
    [run] = harness.store.list_runs("airflow_style")
    assert run.logical_date == datetime(2026, 1, 1, tzinfo=UTC)  # midnight UTC
    [run] = harness.store.list_runs("berlin_style")
    assert run.logical_date == datetime(2025, 12, 31, 23, 0, tzinfo=UTC)  # midnight in Berlin
