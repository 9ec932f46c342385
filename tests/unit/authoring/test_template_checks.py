"""Templates checked at parse time (issue 25, item 5): an unknown variable, macro, filter,
param, dag_run field, var kind or connection field is an import error naming the DAG
file's line, the task, the template and the name; macros, user-defined macros and
filters, template files and templated env= render as Airflow's do."""

from __future__ import annotations

import logging
import os
import textwrap
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.authoring import template_files
from orchestrator.authoring.context import TaskContext
from orchestrator.authoring.loader import DagImportError, load_file
from orchestrator.authoring.macros import MACROS
from orchestrator.authoring.spec import DagSpec, serialize_dag
from orchestrator.authoring.template_check import Names, check_names
from orchestrator.authoring.template_context import TEMPLATE_NAMES, TemplateDatetime
from orchestrator.authoring.templating import (
    TemplateRenderError,
    render_env,
    render_shell,
    render_text,
)

HEAD = """\
from orchestrator import DAG, Param
from orchestrator.sensors import file_sensor, trigger_dag

with DAG("d", schedule=None, params={"n": 1}, user_defined_macros={"project": "acme"},
         user_defined_filters={"shout": lambda s: str(s).upper()}) as dag:
"""


def _load(tmp_path: Path, body: str, name: str = "d.py") -> list:
    path = tmp_path / name
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(body), "    "))
    return load_file(str(path))


def _error(tmp_path: Path, body: str) -> str:
    with pytest.raises(DagImportError) as err:
        _load(tmp_path, body)
    return err.value.message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('dag.shell("a", "echo {{ dss }}")',
         "d.py:6: task 'a': the command: unknown template variable 'dss' (did you mean 'ds'?)"),
        ('dag.shell("a", "echo {{ macros.ds_ad(ds, 1) }}")',
         "d.py:6: task 'a': the command: unknown macro 'macros.ds_ad' (did you mean 'ds_add'?)"),
        ('dag.shell("a", "echo {{ ds | shot }}")',
         "d.py:6: task 'a': the command: unknown filter 'shot'"),
        ('dag.shell("a", "echo {% if ds is evn %}x{% endif %}")',
         "d.py:6: task 'a': the command: unknown test 'evn'"),
        ('dag.shell("a", "echo {{ params.m }}")',
         "d.py:6: task 'a': the command: unknown param 'params.m'; known: n"),
        ('dag.shell("a", "echo {{ params[\'m\'] }}")', "unknown param 'params.m'"),
        ('dag.shell("a", "echo {{ dag_run.cnf }}")',
         "unknown dag_run field 'dag_run.cnf' (did you mean 'conf'?)"),
        ('dag.shell("a", "echo {{ var.values.x }}")', "unknown var kind"),
        ('dag.shell("a", "echo {{ conn.db.hots }}")',
         "unknown connection field 'hots' of conn.db (did you mean 'host'?)"),
        ('dag.shell("a", "echo hi", env={"X": "{{ run_idd }}"})',
         "d.py:6: task 'a': env['X']: unknown template variable 'run_idd'"),
        ('dag.http("a", "http://h/x?d={{ dss }}")', "task 'a': url: unknown template variable 'dss'"),
        ('dag.http("a", "http://h/x", headers={"X": "{{ nope }}"})', "headers['X']: unknown"),
        ('dag.http("a", "http://h/x", json={"a": ["{{ macros.nope }}"]})',
         "task 'a': json['a'][0]: unknown macro 'macros.nope'"),
        ('dag.http("a", "http://h/x", data={"f": "{{ nope }}"})', "data['f']: unknown"),
        ('file_sensor("s", "/tmp/{{ dss }}")', "task 's': filepath: unknown template variable"),
        ('trigger_dag("t", "other", conf={"d": "{{ dss }}"})', "task 't': conf['d']: unknown"),
        ('dag.shell("a", "echo {{ path }} {{ other }}").expand(path=["a"])',
         "unknown template variable 'other'"),
        ('dag.shell("a", "echo 1\\necho {{ ds }}\\necho {{ nope }}")',
         "unknown template variable 'nope' (line 3 of the template)"),
    ],
)  # fmt: skip
def test_an_unknown_name_in_a_template_is_an_import_error_naming_file_line_and_name(
    tmp_path, body, expected
):
    assert expected in _error(tmp_path, body)


def test_a_built_in_sensor_cannot_use_user_defined_macros_and_says_why(tmp_path):
    message = _error(tmp_path, 'file_sensor("s", "/data/{{ project }}/x")')
    assert "unknown template variable 'project': user_defined_macros and user_defined_filters" in (
        message
    )
    assert "not available in a built-in sensor's arguments" in message


def test_known_names_pass_and_mark_the_tasks_that_use_user_templates(tmp_path):
    [dag] = _load(
        tmp_path,
        """
        dag.shell("plain", "echo {{ macros.ds_add(ds, 1) }} {{ params.n }} {{ params.get('n') }}"
                  " {{ dag_run.conf }} {{ var.value.x }} {{ conn.db.host }} {{ ts_nodash }}"
                  " {% for i in range(2) %}{{ loop.index }}{% endfor %}"
                  " {% set x = 1 %}{{ x }}")
        dag.shell("user", "echo {{ project }}")
        dag.shell("filtered", "echo {{ ds | shout }}")
        dag.shell("mapped", "echo {{ path }}").expand(path=["a", "b"])
        dag.shell("kwargs", "echo {{ anything }}").expand_kwargs([{"anything": 1}])
        dag.http("web", "http://h/x/{{ project }}")
        """,
    )
    used = {t.task_id: t.user_templates for t in dag.tasks.values()}
    assert used == {
        "plain": False, "user": True, "filtered": True, "mapped": False, "kwargs": False,
        "web": True,
    }  # fmt: skip
    spec = DagSpec.from_dict(serialize_dag(dag))
    assert spec.tasks["user"].user_templates and not spec.tasks["plain"].user_templates
    assert "user_templates" not in serialize_dag(dag)["tasks"][0]  # absent unless used


@pytest.mark.parametrize(
    ("dag_kw", "message"),
    [
        ('user_defined_macros={"ds": 1}', "user_defined_macros: 'ds' is a template variable"),
        ('user_defined_filters={"f": 1}', "user_defined_filters: 'f' must be a callable"),
        ('user_defined_macros={"a b": 1}', "user_defined_macros: 'a b' is not a name a template"),
        ("template_searchpath=[1]", "template_searchpath must be a folder or a list"),
    ],
)
def test_bad_template_options_are_import_errors(tmp_path, dag_kw, message):
    path = tmp_path / "opts.py"
    path.write_text(
        f"from orchestrator import DAG\n\nwith DAG('o', schedule=None, {dag_kw}):\n    pass\n"
    )
    with pytest.raises(DagImportError) as err:
        load_file(str(path))
    assert "opts.py:3: DAG 'o': " + message in err.value.message


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ('{"1X": "a"}', "env: '1X' is not an environment variable name"),
        ('{"X": 1}', "env['X'] must be a string (a template), got int"),
        ('{"X": "a\\x00"}', "env['X'] contains a NUL byte"),
    ],
)
def test_bad_env_is_an_import_error(tmp_path, env, message):
    assert message in _error(tmp_path, f'dag.shell("a", "echo", env={env})')


def test_template_files_are_read_from_the_search_path_and_name_their_line(tmp_path):
    (tmp_path / "sql").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "sql" / "q.sql").write_text("select '{{ ds }}'\n")
    (tmp_path / "scripts" / "run.sh").write_text("echo one\necho {{ ds }}\necho {{ nope }}\n")
    (tmp_path / "ok.sh").write_text('echo "{{ params.n }} $Q"\n')
    path = tmp_path / "files.py"
    path.write_text(
        "from orchestrator import DAG\n\n"
        "with DAG('f', schedule=None, params={'n': 1}, template_searchpath=['sql']) as dag:\n"
        "    dag.shell('ok', 'ok.sh', env={'Q': 'q.sql'})\n"
        "    dag.shell('literal', 'ok.sh ')\n"  # a space: a command, as in Airflow
    )
    template_files.start_recording()
    [dag] = load_file(str(path))
    seen = template_files.recorded()
    ok = dag.tasks["ok"]
    assert ok.command == 'echo "{{ params.n }} $Q"\n' and ok.command_file.endswith("ok.sh")
    assert ok.env == {"Q": "select '{{ ds }}'\n"} and ok.env_files["Q"].endswith("sql/q.sql")
    assert dag.tasks["literal"].command == "ok.sh " and dag.tasks["literal"].command_file is None
    # every file looked for is watched, found or not (the processor reparses on a change)
    assert [s[0] for s in seen] == sorted(
        [str(tmp_path / "ok.sh"), str(tmp_path / "sql" / "ok.sh"), str(tmp_path / "sql/q.sql")]
    )
    assert seen[0] == (str(tmp_path / "ok.sh"), *_stat(tmp_path / "ok.sh"))
    assert seen[1] == (str(tmp_path / "sql" / "ok.sh"),)  # looked for there first: missing

    path.write_text(
        "from orchestrator import DAG\n\n"
        "with DAG('f', schedule=None) as dag:\n"
        "    dag.shell('run', 'scripts/run.sh')\n"
    )
    with pytest.raises(DagImportError) as err:
        load_file(str(path))
    assert "files.py:4: task 'run': the command (" in err.value.message
    assert "scripts/run.sh:3" in err.value.message and "'nope'" in err.value.message


def _stat(p: Path) -> tuple[int, int]:
    st = os.stat(p)
    return st.st_mtime_ns, st.st_size


def test_a_missing_template_file_says_where_it_looked_and_how_to_run_a_command(tmp_path):
    message = _error(tmp_path, 'dag.shell("a", "deploy.sh")')
    assert "d.py:6: task 'a': template file 'deploy.sh' not found (looked in: " in message
    assert "add a space after it ('deploy.sh ') to run it as a command instead" in message


def test_a_template_file_is_checked_for_shell_contexts_too(tmp_path):
    (tmp_path / "bad.sh").write_text("cat <<'EOF'\n{{ params.n }}\nEOF\n")
    message = _error(tmp_path, 'dag.shell("a", "bad.sh")')
    assert "task 'a' (" in message and "heredoc whose delimiter is quoted" in message


def test_template_names_are_exactly_the_variables_a_try_renders_with():
    assert set(_ctx().template_vars("UTC")) == TEMPLATE_NAMES


def _ctx(**kw) -> TaskContext:
    base = {
        "dag_id": "d", "run_id": "r", "task_id": "t",
        "logical_date": datetime(2026, 1, 31, 23, 30, tzinfo=UTC),
        "data_interval_start": datetime(2026, 1, 30, 23, 30, tzinfo=UTC),
        "data_interval_end": datetime(2026, 1, 31, 23, 30, tzinfo=UTC),
        "try_number": 1, "params": {"n": 3}, "idempotency_key": "d/r/t",
        "log": logging.getLogger("t"), "conf": {"n": 3},
    }  # fmt: skip
    return TaskContext(**(base | kw))


def test_macros_render_as_airflows():
    variables = _ctx(timezone="Europe/Berlin").template_vars("Europe/Berlin")
    text = render_text(
        "{{ ds }} {{ macros.ds_add(ds, 1) }} {{ macros.ds_add(ds, -31) }} "
        "{{ macros.ds_format(ds, '%Y-%m-%d', '%d.%m.%Y') }} "
        "{{ (logical_date + macros.timedelta(days=1)).strftime('%Y-%m-%d') }} "
        "{{ macros.datetime(2026, 5, 1).year }} "
        "{{ (macros.dateutil.parser.parse(ds) + macros.dateutil.relativedelta.relativedelta(months=1)).date() }} "
        "{{ logical_date }} {{ dag_run.conf.n }} {{ ts_nodash }} {{ ts_nodash_with_tz }}",
        variables,
    )
    assert text == (
        "2026-02-01 2026-02-02 2026-01-01 01.02.2026 2026-02-01 2026 2026-03-01 "
        "2026-01-31T23:30:00+00:00 3 20260201T003000 20260201T003000+0100"
    )
    assert 0 <= float(render_text("{{ macros.random() }}", variables)) < 1
    assert uuid.UUID(render_text("{{ macros.uuid.uuid4() }}", variables)).version == 4
    assert float(render_text("{{ macros.time.time() }}", variables)) > 1.7e9


def test_a_template_datetime_prints_iso_8601_and_keeps_its_type_in_arithmetic():
    when = _ctx().template_vars("UTC")["logical_date"]
    assert isinstance(when, TemplateDatetime) and str(when) == "2026-01-31T23:30:00+00:00"
    later = when - MACROS.timedelta(hours=1)
    assert isinstance(later, TemplateDatetime) and str(later) == "2026-01-31T22:30:00+00:00"
    assert when == datetime(2026, 1, 31, 23, 30, tzinfo=UTC) + timedelta(0)


def test_user_filters_and_values_in_a_shell_command_still_travel_in_the_environment():
    variables = _ctx(params={"x": "$(id>pwned)"}).template_vars("UTC")
    cmd = render_shell(
        'echo "{{ params.x | shout }}"', variables, {"shout": lambda s: str(s).upper() + "!"}
    )
    assert cmd.script == 'echo "${ORCH_V1}"' and cmd.env == {"ORCH_V1": "$(ID>PWNED)!"}


def test_env_values_render_as_text_and_refuse_a_nul():
    variables = _ctx(params={"x": "a; rm -rf /"}).template_vars("UTC")
    env = render_env({"DAY": "{{ macros.ds_add(ds, 1) }}", "X": "{{ params.x }}"}, variables)
    assert env == {"DAY": "2026-02-01", "X": "a; rm -rf /"}
    with pytest.raises(
        TemplateRenderError, match="env\\['X'\\]: the rendered value contains a NUL"
    ):
        render_env({"X": "{{ params.x }}"}, _ctx(params={"x": "a\x00b"}).template_vars("UTC"))


def test_check_names_doctest_shape():
    check_names("{{ params.n }}", Names(params={"n"}))
    with pytest.raises(TemplateRenderError, match="unknown template variable 'x'"):
        check_names("{{ x }}", Names(params=set()))
    check_names("{{ x }}", Names(params=set(), open_variables=True))  # expand_kwargs


def test_no_module_is_reachable_from_the_template_variables():
    """The sandbox lets a template read any attribute not starting with '_': a module in
    reach (``macros.uuid.os``) would let it run anything, in the web server too."""
    import types

    seen: set[int] = set()
    found: list[str] = []

    def walk(value, path: str, depth: int) -> None:
        if id(value) in seen or depth > 4:
            return
        seen.add(id(value))
        if isinstance(value, types.ModuleType):
            found.append(path)
            return
        if isinstance(value, str | int | float | bool | type(None) | dict | list):
            return
        for name in dir(value):
            if name.startswith("_"):
                continue
            try:
                attr = getattr(value, name)
            except Exception:  # noqa: BLE001 - a lookup that needs a store: not an attribute
                continue
            walk(attr, f"{path}.{name}", depth + 1)

    for name, value in _ctx().template_vars("UTC").items():
        walk(value, name, 0)
    assert found == []
    with pytest.raises(TemplateRenderError, match="has no attribute 'os'"):
        render_text("{{ macros.uuid.os.getcwd() }}", _ctx().template_vars("UTC"))
