"""Templates in real tries on both backends (issue 25, item 5): macros in a shell command,
a templated env= reaching the command (the literal ``{{ run_id }}`` did before), the
DAG's user-defined macros and filters, ``{{ dag_run.conf }}``, .sh/.sql template files
(and the processor noticing when one changes), an HTTP task's macros and a
trigger_dag task's templated conf."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.test_http_tasks import server  # noqa: F401 - the fixture

DAG = """
from orchestrator import DAG, Param

def shout(value):
    return str(value).upper() + "!"

with DAG("tpl", schedule=None, params={"n": Param(2, type="integer", minimum=1), "x": "safe"},
         user_defined_macros={"project": "acme", "twice": lambda x: x * 2},
         user_defined_filters={"shout": shout}) as dag:
    dag.shell("macros", 'echo "next={{ macros.ds_add(ds, 1) }} '
              'fmt={{ macros.ds_format(ds, "%Y-%m-%d", "%d/%m/%Y") }} '
              'tomorrow={{ (logical_date + macros.timedelta(days=1)).strftime("%Y%m%d") }} '
              'conf={{ dag_run.conf.n }}"')
    dag.shell("env", 'echo "RUN=$RUN DAY=$DAY X=$X"',
              env={"RUN": "{{ run_id }}", "DAY": "{{ macros.ds_add(ds, -1) }}",
                   "X": "{{ dag_run.conf.get('x', 'none') }}"})
    dag.shell("user", 'echo "{{ project }} {{ twice(params.n) }} {{ ds | shout }}"')
    dag.shell("files", "scripts/report.sh", env={"QUERY": "report.sql"})
"""


def _log(harness, run_id: str, task_id: str) -> str:
    [tr] = harness.store.tries(run_id, task_id)
    return Path(harness.settings.log_dir, tr.log_path).read_text()


def _write_templates(dags_dir: Path, marker: str = "v1") -> None:
    (dags_dir / "scripts").mkdir(exist_ok=True)
    (dags_dir / "scripts" / "report.sh").write_text(
        f'echo "{marker} day={{{{ ds }}}} n={{{{ params.n }}}}"\necho "query: $QUERY"\n'
    )
    (dags_dir / "report.sql").write_text("select * from sales where day = '{{ ds }}'\n")


def test_macros_env_user_templates_and_files_render_in_real_shell_tries(
    harness, write_dag, dags_dir
):
    _write_templates(dags_dir)
    write_dag("tpl.py", DAG)
    harness.parse()
    assert harness.store.import_errors() == []
    conf = {"n": 3, "x": "$(touch /tmp/pwned-by-env) ; `id`"}
    run = harness.store.trigger_run(
        "tpl", harness.clock.now(), conf={"n": 3}, logical_date=_day("2026-03-01")
    )
    assert harness.run_until_finished(run.run_id).state == "success"
    assert "\nnext=2026-03-02 fmt=01/03/2026 tomorrow=20260302 conf=3\n" in _log(
        harness, run.run_id, "macros"
    )
    env_log = _log(harness, run.run_id, "env")
    assert f"\nRUN={run.run_id} DAY=2026-02-28 X=none\n" in env_log
    assert "{{" not in env_log  # the literal template no longer reaches the command
    assert "\nacme 6 2026-03-01!\n" in _log(harness, run.run_id, "user")
    files = _log(harness, run.run_id, "files")
    assert "\nv1 day=2026-03-01 n=3\n" in files
    assert "\nquery: select * from sales where day = '2026-03-01'\n" in files

    # a hostile conf value in env= is data: it reaches the command as it is, runs nothing
    run2 = harness.store.trigger_run("tpl", harness.clock.now(), conf={"x": conf["x"]})
    harness.run_until_finished(run2.run_id)
    assert f"X={conf['x']}\n" in _log(harness, run2.run_id, "env")
    assert not Path("/tmp/pwned-by-env").exists()


def _day(text: str):
    from datetime import UTC, datetime

    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_a_changed_template_file_makes_a_new_version_without_touching_the_dag_file(
    harness, write_dag, dags_dir
):
    _write_templates(dags_dir, "v1")
    write_dag("tpl.py", DAG)
    harness.parse()
    first = harness.store.get_dag("tpl").version_hash
    assert harness.parse().parsed == 0  # nothing changed: nothing parsed
    _write_templates(dags_dir, "v2-longer")
    assert harness.parse().parsed == 1
    second = harness.store.get_dag("tpl").version_hash
    assert second != first
    assert harness.store.spec("tpl", second).tasks["files"].command.startswith('echo "v2-longer')
    assert (
        harness.store.spec("tpl", second).tasks["files"].command_file.endswith("scripts/report.sh")
    )
    run = harness.store.trigger_run("tpl", harness.clock.now())
    harness.run_until_finished(run.run_id)
    assert "\nv2-longer day=" in _log(harness, run.run_id, "files")


def test_a_missing_template_file_is_an_import_error_until_it_appears(harness, write_dag, dags_dir):
    write_dag("tpl.py", DAG)
    harness.parse()
    [error] = harness.store.import_errors()
    assert "tpl.py:18: task 'files': template file 'report.sql' not found" in error.message
    _write_templates(dags_dir)  # the DAG file itself is unchanged
    assert harness.parse().parsed == 1
    assert harness.store.import_errors() == []
    assert harness.store.get_dag("tpl").is_active


def test_an_http_task_renders_macros_and_user_filters(harness, write_dag, server):  # noqa: F811
    write_dag(
        "web.py",
        f"""
from orchestrator import DAG

with DAG("web", schedule=None, user_defined_filters={{"rev": lambda s: str(s)[::-1]}}) as dag:
    dag.http("call", "{server.base}/day/{{{{ macros.ds_add(ds, 1) }}}}?r={{{{ ds | rev }}}}",
             method="POST", json={{"next": "{{{{ macros.ds_add(ds, 7) }}}}"}})
""",
    )
    harness.parse()
    assert harness.store.import_errors() == []
    run = harness.store.trigger_run("web", harness.clock.now(), logical_date=_day("2026-03-01"))
    assert harness.run_until_finished(run.run_id).state == "success"
    [req] = server.requests
    assert req["path"] == "/day/2026-03-02" and req["query"]["r"] == ["10-30-6202"]
    assert json.loads(req["body"]) == {"next": "2026-03-08"}


def test_a_trigger_dag_conf_is_rendered_and_checked_against_the_target_params(harness, write_dag):
    write_dag(
        "pair.py",
        """
from orchestrator import DAG, Param
from orchestrator.sensors import trigger_dag

with DAG("target", schedule=None,
         params={"day": Param("2026-01-01", type="string", format="date"),
                 "n": Param(1, type="integer", maximum=5)}) as target:
    target.shell("noop", "true")

with DAG("source", schedule=None) as source:
    trigger_dag("kick", "target", conf={"day": "{{ macros.ds_add(ds, 1) }}", "n": 4})

with DAG("bad_source", schedule=None) as bad:
    trigger_dag("kick", "target", conf={"n": 9}, retries=0)
""",
    )
    harness.parse()
    assert harness.store.import_errors() == []
    run = harness.store.trigger_run("source", harness.clock.now(), logical_date=_day("2026-03-01"))
    assert harness.run_until_finished(run.run_id).state == "success"
    [made] = harness.store.list_runs("target")
    assert made.conf == {"day": "2026-03-02", "n": 4}

    bad = harness.store.trigger_run("bad_source", harness.clock.now())
    assert harness.run_until_finished(bad.run_id).state == "failed"
    [ti] = harness.store.task_instances(bad.run_id)
    assert "param 'n': 9 is greater than the maximum of 5 (rule maximum: 5)" in ti.error
    assert len(harness.store.list_runs("target")) == 1  # nothing created for the bad conf


def test_render_template_as_native_obj_gives_json_values_their_literals_type(
    harness,
    write_dag,
    server,  # noqa: F811
):
    """Issue 25: Airflow's render_template_as_native_obj, for the templates that give
    JSON values (an HTTP body, a trigger's conf); without it they stay text."""
    write_dag(
        "native.py",
        f"""
from orchestrator import DAG
from orchestrator.sensors import trigger_dag

with DAG("target", schedule=None, params={{"days": None, "label": None}}) as target:
    target.shell("noop", "true")

for native in (True, False):
    with DAG(f"native_{{native}}", schedule=None, params={{"n": 3}},
             render_template_as_native_obj=native) as dag:
        dag.http("call", "{server.base}/n", method="POST",
                 json={{"pair": "[{{{{ params.n }}}}, {{{{ params.n * 2 }}}}]",
                       "text": "n={{{{ params.n }}}}", "code": "{{{{ '__import__' }}}}('os')"}})
        trigger_dag("kick", "target", conf={{"days": "[{{{{ params.n }}}}]", "label": "day {{{{ ds }}}}"}})
""",
    )
    harness.parse()
    assert harness.store.import_errors() == []
    for native in (True, False):
        run = harness.store.trigger_run(f"native_{native}", harness.clock.now())
        assert harness.run_until_finished(run.run_id).state == "success"
    bodies = [json.loads(r["body"]) for r in server.requests]
    assert bodies[0] == {"pair": [3, 6], "text": "n=3", "code": "__import__('os')"}
    assert bodies[1] == {"pair": "[3, 6]", "text": "n=3", "code": "__import__('os')"}
    confs = sorted(
        (json.dumps(r.conf["days"]), r.conf["label"][:3]) for r in harness.store.list_runs("target")
    )
    assert confs == [('"[3]"', "day"), ("[3]", "day")]


def test_dag_run_run_type_says_how_the_run_came(harness, write_dag, dags_dir):
    """Issue 26: {{ dag_run.run_type }} and dag_run.run_type by name, from the store."""
    write_dag(
        "kinds.py",
        """
from orchestrator import DAG, task

with DAG("kinds", schedule=None) as dag:
    dag.shell("echo_kind", "echo {{ dag_run.run_type }} > kind.txt")

    @task
    def by_name(dag_run):
        return dag_run.run_type
""",
    )
    harness.parse()
    assert harness.store.import_errors() == []
    run = harness.store.trigger_run("kinds", harness.clock.now())
    assert harness.run_until_finished(run.run_id).state == "success"
    assert (dags_dir / "kind.txt").read_text().strip() == "manual"
    assert json.loads(harness.store.results(run.run_id, ["by_name"])["by_name"]) == "manual"
