"""The authoring API (orchestrator.authoring.dag): building DAGs, wiring tasks, and the errors
a DAG author sees, each naming the file and line of the offending statement."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from orchestrator import DAG, task
from orchestrator.authoring.dag import Task
from orchestrator.errors import DagDefinitionError

START = datetime(2026, 1, 1, tzinfo=UTC)


def here() -> int:
    """The line number of the caller (so expected lines survive edits to this file)."""
    return sys._getframe(1).f_lineno


def upstream(dag: DAG) -> dict[str, set[str]]:
    return {t.task_id: set(t.upstream_ids) for t in dag.tasks.values()}


def assert_error_at(err: pytest.ExceptionInfo[DagDefinitionError], line: int, *parts: str):
    exc = err.value
    assert exc.fileloc == __file__
    assert exc.lineno == line
    assert str(exc).startswith(f"{__file__}:{line}: "), str(exc)
    for part in parts:
        assert part in str(exc), f"{part!r} not in {str(exc)!r}"


# --------------------------------------------------------------------------- building


def test_task_decorator_bare_and_with_options_and_dag_defaults():
    with DAG(
        "etl",
        schedule="@daily",
        start_date=START,
        default_retries=2,
        retry_delay=timedelta(seconds=7),
        max_retry_delay=timedelta(minutes=3),
        default_timeout=timedelta(minutes=9),
        retry_exponential=False,
        description="moves rows",
        tags=["team-a", "nightly"],
        params={"limit": 10},
    ) as dag:

        @task
        def extract(ctx):
            return 1

        @task(retries=5, timeout=60, retry_delay=0, trigger_rule="all_done", queue="io")
        def load(ctx):
            return 2

    assert isinstance(extract, Task) and isinstance(load, Task)
    assert set(dag.tasks) == {"extract", "load"}
    assert extract.kind == "python" and extract(None) == 1
    # defaults inherited from the DAG
    assert extract.retries == 2
    assert extract.retry_delay == timedelta(seconds=7)
    assert extract.max_retry_delay == timedelta(minutes=3)
    assert extract.timeout == timedelta(minutes=9)
    assert extract.retry_exponential is False
    assert extract.queue == "default"
    assert extract.trigger_rule == "all_success"
    # per-task options win, including an explicit zero delay
    assert load.retries == 5
    assert load.timeout == timedelta(seconds=60)
    assert load.retry_delay == timedelta(0)
    assert load.trigger_rule == "all_done"
    assert load.queue == "io"
    assert load.retry_policy.max_tries == 6
    assert dag.description == "moves rows"
    assert dag.tags == ["team-a", "nightly"]
    assert dag.params == {"limit": 10}
    assert dag.schedule.kind == "cron"


def test_task_with_task_id_in_a_loop_and_reused_decorator():
    with DAG("loop") as dag:

        def work(ctx):
            return None

        made = [task(task_id=f"part_{i}")(work) for i in range(3)]
        deco = task(retries=1)

        @deco
        def first(ctx):
            pass

        @deco
        def second(ctx):
            pass

    assert [t.task_id for t in made] == ["part_0", "part_1", "part_2"]
    assert set(dag.tasks) == {"part_0", "part_1", "part_2", "first", "second"}
    assert dag.tasks["second"].retries == 1


def test_shell_task_and_dag_task_without_context_manager():
    dag = DAG("plain")
    say = dag.shell("say", "echo {{ ds }}", retries=3, env={"A": "1"})

    @dag.task
    def after(ctx):
        pass

    say >> after
    dag.validate()
    assert say.kind == "shell" and say.command == "echo {{ ds }}"
    assert say.retries == 3 and say.env == {"A": "1"}
    assert upstream(dag) == {"say": set(), "after": {"say"}}
    with pytest.raises(TypeError, match="shell task 'say' is not callable"):
        say()


def test_shift_operators_with_lists():
    with DAG("wiring") as dag:
        a, b, c, d, e, f = (dag.shell(n, "true") for n in "abcdef")
        result = a >> [b, c] >> d
        [d, e] >> f
        e << a
        g = dag.shell("g", "true")
        [a] << g
    assert result is d
    assert upstream(dag) == {
        "a": {"g"},
        "b": {"a"},
        "c": {"a"},
        "d": {"b", "c"},
        "e": {"a"},
        "f": {"d", "e"},
        "g": set(),
    }


def test_dependencies_by_id_and_chain():
    with DAG("byid") as dag:
        for name in ("x", "y", "z", "w"):
            dag.shell(name, "true")
        dag.chain("x", "y", dag.tasks["z"])
        dag.tasks["z"] >> "w"
    assert upstream(dag) == {"x": set(), "y": {"x"}, "z": {"y"}, "w": {"z"}}
    assert list(dag.graph().edges) == [("x", "y"), ("y", "z"), ("z", "w")]


def test_naive_dates_without_timezone_are_utc_like_airflow():
    # the way every Airflow, Dagster and Prefect example writes it: no tzinfo, no timezone=
    dag = DAG("naive", schedule="@daily", start_date=datetime(2026, 1, 1),
              end_date=datetime(2026, 2, 1, 6, 30))  # fmt: skip
    assert dag.timezone == "UTC"
    assert dag.start_date.astimezone(UTC) == datetime(2026, 1, 1, tzinfo=UTC)
    assert dag.end_date.astimezone(UTC) == datetime(2026, 2, 1, 6, 30, tzinfo=UTC)
    assert dag.schedule.first() == datetime(2026, 1, 1, tzinfo=UTC)


def test_an_aware_start_date_keeps_its_own_zone():
    tokyo = ZoneInfo("Asia/Tokyo")
    dag = DAG("aware", schedule="@daily", timezone="Europe/Berlin",
              start_date=datetime(2026, 1, 1, 9, 0, tzinfo=tokyo))  # fmt: skip
    assert dag.start_date.astimezone(UTC) == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert DAG("aware_utc", start_date=datetime(2026, 1, 1, tzinfo=tokyo)).start_date == (
        datetime(2025, 12, 31, 15, 0, tzinfo=UTC)
    )


def test_naive_start_date_with_explicit_timezone_is_read_in_that_zone():
    dag = DAG(
        "berlin", schedule="@daily", timezone="Europe/Berlin", start_date=datetime(2026, 1, 1)
    )
    assert dag.start_date == datetime(2026, 1, 1, tzinfo=ZoneInfo("Europe/Berlin"))
    assert dag.start_date.astimezone(UTC) == datetime(2025, 12, 31, 23, 0, tzinfo=UTC)


def test_dag_records_its_file_and_line():
    line = here() + 1
    dag = DAG("where")
    assert (dag.fileloc, dag.lineno) == (__file__, line)


# --------------------------------------------------------------------------- errors


def test_cycle_names_the_path_and_the_line_of_its_first_task():
    with pytest.raises(DagDefinitionError) as err, DAG("cyclic") as dag:
        line = here() + 1
        a = dag.shell("a", "true")
        b = dag.shell("b", "true")
        c = dag.shell("c", "true")
        a >> b >> c >> a
    assert_error_at(err, line, "DAG 'cyclic' has a cycle: a -> b -> c -> a")


def test_self_dependency_is_a_cycle():
    with pytest.raises(DagDefinitionError, match="has a cycle: a -> a"), DAG("selfish") as dag:
        a = dag.shell("a", "true")
        a >> a


def test_cycle_through_chain_by_id():
    with pytest.raises(DagDefinitionError, match="has a cycle"), DAG("chained") as dag:
        dag.shell("a", "true")
        dag.shell("b", "true")
        dag.chain("a", "b", "a")


def test_duplicate_task_id_points_at_the_second_and_names_the_first():
    with pytest.raises(DagDefinitionError) as err, DAG("dup") as dag:
        first = here() + 1
        dag.shell("same", "true")
        second = here() + 1
        dag.shell("same", "false")
    assert_error_at(
        err, second, f"duplicate task_id 'same' in DAG 'dup' (first defined at line {first})"
    )


def test_dependency_on_unknown_task_id():
    with pytest.raises(DagDefinitionError) as err, DAG("unknown") as dag:
        load = dag.shell("load", "true")
        line = here() + 1
        load << "extrct"
    assert_error_at(err, line, "dependency 'extrct' >> 'load' names unknown task 'extrct'")


def test_task_from_another_dag_is_refused():
    other = DAG("other")
    foreign = other.shell("foreign", "true")
    with pytest.raises(DagDefinitionError) as err, DAG("mine") as dag:
        mine = dag.shell("mine", "true")
        line = here() + 1
        mine >> foreign
    assert_error_at(err, line, "task 'foreign' belongs to DAG 'other', not 'mine'")


def test_dependency_on_something_that_is_not_a_task():
    with pytest.raises(DagDefinitionError, match="cannot set a dependency on 42"), DAG("x") as d:
        d.shell("a", "true") >> 42


def test_task_outside_a_dag():
    def lonely(ctx):
        pass

    with pytest.raises(DagDefinitionError) as err:
        line = here() + 1
        task(lonely)
    assert_error_at(err, line, "task 'lonely' is defined outside a DAG")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"schedule": "* * *"}, "DAG 'd': bad cron expression '* * *': expected 5 fields"),
        ({"schedule": "61 * * * *"}, "invalid minute field '61'"),
        ({"schedule": "@fortnightly"}, "@fortnightly"),
        ({"timezone": "Mars/Olympus_Mons"}, "DAG 'd': unknown timezone 'Mars/Olympus_Mons'"),
        (
            {"schedule": "@daily", "start_date": START, "end_date": START - timedelta(days=1)},
            "DAG 'd': end_date 2025-12-31T00:00:00+00:00 is before start_date "
            "2026-01-01T00:00:00+00:00",
        ),
        ({"misfire": "sometimes"}, "DAG 'd': misfire must be one of"),
        ({"overlap": "merge"}, "DAG 'd': overlap must be one of"),
        ({"max_active_runs": 0}, "max_active_runs must be an integer >= 1"),
        ({"default_retries": -1}, "default_retries must be an integer >= 0"),
        ({"default_retries": True}, "default_retries must be an integer >= 0"),
        ({"retry_delay": timedelta(seconds=-1)}, "retry_delay must be a non-negative timedelta"),
        ({"params": {"when": START}}, "DAG 'd': params must be JSON-serialisable"),
    ],
)
def test_dag_argument_errors_name_the_dag_and_line(kwargs, expected):
    with pytest.raises(DagDefinitionError) as err:
        line = here() + 1
        DAG("d", **kwargs)
    assert_error_at(err, line, expected)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "has space",
        "slash/y",
        "é",
        "x" * 251,
        7,
        None,
        "nl_id\n",
        "tab\t",
        "\nlead",
        ".dot",
        "-dash",
    ],
)
def test_invalid_dag_ids(bad):
    with pytest.raises(DagDefinitionError, match="invalid dag_id"):
        DAG(bad)


@pytest.mark.parametrize("bad", ["nl_id\n", "x\r", "a b", "-x"])
def test_invalid_ids_are_one_clear_error_naming_file_line_and_the_rule(bad):
    with pytest.raises(DagDefinitionError) as err:
        line = here() + 1
        DAG(bad)
    assert_error_at(
        err,
        line,
        f"invalid dag_id {bad!r}: an id is 1 to 250 letters, digits, '_', '.' or '-', "
        "not starting with '.' or '-'",
    )
    with pytest.raises(DagDefinitionError) as err, DAG("fine") as dag:
        line = here() + 1
        dag.shell(bad, "true")
    assert_error_at(err, line, f"invalid task_id {bad!r}: an id is 1 to 250")


@pytest.mark.parametrize("good", ["a", "A_b.c-d", "0start", "x" * 250])
def test_valid_dag_ids(good):
    assert DAG(good).dag_id == good


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"task_id": "bad id"}, "invalid task_id 'bad id'"),
        ({"trigger_rule": "sometimes"}, "task 't': unknown trigger_rule 'sometimes' (one of: "),
        ({"retries": -2}, "task 't': retries must be an integer >= 0, got -2"),
        ({"timeout": "soon"}, "timeout must be a non-negative timedelta"),
        ({"queue": "no queue"}, "invalid queue 'no queue'"),
        ({"command": "echo {{ ds "}, "task 't': bad command template: unexpected end"),
        ({"command": "echo {% if %}"}, "task 't': bad command template"),
        ({"command": "   "}, "task 't': command must be a non-empty string"),
    ],
)
def test_task_argument_errors_name_the_task_and_line(kwargs, expected):
    options = {"task_id": "t", "command": "true", **kwargs}
    dag = DAG("d")
    with pytest.raises(DagDefinitionError) as err:
        line = here() + 1
        dag.shell(options.pop("task_id"), options.pop("command"), **options)
    assert_error_at(err, line, expected)


def test_error_inside_with_block_does_not_mask_the_users_exception():
    with pytest.raises(ZeroDivisionError), DAG("boom") as dag:
        a = dag.shell("a", "true")
        a >> a  # a cycle, but the user's own error comes first
        1 / 0  # noqa: B018
