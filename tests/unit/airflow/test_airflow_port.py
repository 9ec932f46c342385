"""``orchestrator dags port`` (issue 26 item 2): Airflow 2 and 3 imports rewritten to
``orchestrator.airflow`` on exactly their lines, the result checked, and a verdict per
file; no file changed without ``--write``, and never a file that is not portable."""

from __future__ import annotations

import json
import textwrap

from orchestrator.airflow.porting import NOT_PORTABLE, PORTED, WARNED, port_source
from orchestrator.cli import main

AIRFLOW2 = textwrap.dedent(
    """\
    # a comment kept
    from datetime import datetime

    from airflow import DAG
    from airflow.decorators import task, task_group
    from airflow.models import Variable, BaseOperator
    from airflow.operators.empty import EmptyOperator
    from airflow.operators.dummy import DummyOperator
    from airflow.operators.python import (
        PythonOperator,
        get_current_context as ctx,
    )
    from airflow.sensors.external_task import ExternalTaskSensor
    from airflow.utils.trigger_rule import TriggerRule

    if True:
        from airflow.exceptions import AirflowSkipException

    with DAG("d", schedule=None, start_date=datetime(2021, 1, 1)) as dag:
        EmptyOperator(task_id="a") >> DummyOperator(task_id="b")
    """
)


def test_airflow_2_and_3_imports_are_rewritten_on_their_lines_only():
    report = port_source(AIRFLOW2, "dags/d.py")
    lines = report.text.splitlines()
    assert lines[0] == "# a comment kept" and lines[1] == "from datetime import datetime"
    assert lines[3] == "from orchestrator.airflow import DAG"
    assert lines[4] == "from orchestrator.airflow import task, task_group"
    assert lines[5] == "from orchestrator.airflow import Variable, BaseOperator"
    assert lines[7] == "from orchestrator.airflow import EmptyOperator as DummyOperator"
    assert lines[8] == "from orchestrator.airflow import PythonOperator, get_current_context as ctx"
    assert lines[9] == "from orchestrator.airflow import ExternalTaskSensor"
    assert "    from orchestrator.airflow import AirflowSkipException" in lines  # indented
    assert "airflow." not in report.text.replace("orchestrator.airflow", "")
    assert report.text.endswith('DummyOperator(task_id="b")\n')
    assert report.rewritten == 9 and report.verdict == WARNED
    assert "line 8: DummyOperator is EmptyOperator here (imported as DummyOperator)" in (
        report.warnings
    )
    assert any(w.startswith("line 6: Variable:") for w in report.warnings)
    compile(report.text, "d.py", "exec")  # it parses


def test_a_file_with_supported_names_only_ports_cleanly_and_a_diff_shows_it():
    report = port_source("from airflow.sdk import dag, task\n\nx = 1", "etl.py")
    assert (
        report.verdict == PORTED
        and report.text == "from orchestrator.airflow import dag, task\n\nx = 1"
    )
    diff = report.diff()
    assert "-from airflow.sdk import dag, task" in diff
    assert "+from orchestrator.airflow import dag, task" in diff and diff.startswith("--- a/etl.py")
    untouched = port_source("import os\n", "plain.py")
    assert untouched.verdict == PORTED and not untouched.changed


def test_what_does_not_port_is_named_at_its_line():
    source = textwrap.dedent(
        """\
        import airflow.utils.dates
        from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
        from airflow.sdk import DAG, task, AssetAlias
        from airflow.operators.bash import *
        import os; from airflow.models import Variable
        from orchestrator.airflow import BashOperator

        with DAG("d", schedule_interval="@daily"):
            BashOperator(task_id="t", bash_command="x", sla=1, retires=2)

            @task.docker(image="python")
            def f():
                pass
        """
    )
    report = port_source(source, "k.py")
    assert report.verdict == NOT_PORTABLE
    problems = "\n".join(report.problems)
    assert "line 1: import airflow.utils.dates" in problems
    assert "line 2: KubernetesPodOperator (from airflow.providers.cncf" in problems
    assert "line 3: AssetAlias (from airflow.sdk) is not in orchestrator.airflow: name each" in (
        problems
    )
    assert "line 4: from airflow.operators.bash import *" in problems
    assert "line 5: from airflow.models import ... shares its line" in problems
    assert "line 8: DAG(schedule_interval=...): Airflow 3 removed it: write schedule=" in problems
    assert "line 9: BashOperator(sla=...): SLAs are gone" in problems
    assert "line 9: BashOperator(retires=...): BashOperator takes no retires=" in problems
    assert "line 11: @task.docker is not supported here" in problems
    # what ports is rewritten; what does not stays, so the file says what it needs
    assert "from orchestrator.airflow import DAG, task\nfrom airflow.sdk import AssetAlias\n" in (
        report.text
    )
    assert "import os; from airflow.models import Variable" in report.text
    inline = port_source("if True: from airflow.sdk import DAG\n", "i.py")
    assert inline.verdict == NOT_PORTABLE and not inline.changed
    broken = port_source("from airflow.sdk import (\n", "bad.py")
    assert broken.verdict == NOT_PORTABLE and broken.problems[0].startswith("line ")


def test_the_command_writes_only_with_write_and_never_a_file_that_does_not_port(tmp_path, capsys):
    folder = tmp_path / "dags"
    (folder / "sub").mkdir(parents=True)
    good = folder / "good.py"
    good.write_text("from airflow.sdk import DAG\n")
    bad = folder / "sub" / "bad.py"
    bad.write_text("from airflow.sdk import DAG, AssetAlias\n")
    before = (good.read_text(), bad.read_text())
    assert main(["dags", "port", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"{good}: ported (1 import(s) rewritten)" in out
    assert f"{bad}: not portable (1 import(s) rewritten)" in out
    assert "  line 1: AssetAlias (from airflow.sdk) is not in orchestrator.airflow" in out
    assert (good.read_text(), bad.read_text()) == before  # nothing written
    assert main(["dags", "port", str(good), "--diff"]) == 0
    assert "+from orchestrator.airflow import DAG" in capsys.readouterr().out
    assert good.read_text() == before[0]
    assert main(["dags", "port", str(folder), "--write"]) == 1
    out = capsys.readouterr().out
    assert "ported (1 import(s) rewritten, written)" in out and "not written" in out
    assert good.read_text() == "from orchestrator.airflow import DAG\n"
    assert bad.read_text() == before[1]
    assert main(["dags", "port", str(folder), "--json"]) == 1
    rows = {r["path"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[str(good)]["verdict"] == "ported" and rows[str(good)]["rewritten"] == 0
    assert rows[str(bad)]["verdict"] == "not portable" and rows[str(bad)]["written"] is False
    assert main(["dags", "port", str(tmp_path / "missing.py")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_porting_a_ported_file_changes_nothing():
    once = port_source(AIRFLOW2, "d.py")
    twice = port_source(once.text, "d.py")
    assert not twice.changed and twice.rewritten == 0 and twice.verdict == PORTED


def test_a_mapped_classic_operator_that_does_not_map_here_is_named_at_its_line():
    source = textwrap.dedent(
        """\
        from airflow.providers.standard.operators.bash import BashOperator
        from airflow.providers.standard.operators.python import PythonOperator
        from airflow.sdk import DAG

        with DAG("d", schedule=None):
            BashOperator.partial(task_id="a").expand(bash_command=["echo 1"])
            BashOperator.partial(task_id="b").expand(
                env=[{"A": "1"}]
            )
            PythonOperator.partial(task_id="c", python_callable=print).expand_kwargs([{}])
            PythonOperator.partial(task_id="d", python_callable=print).expand(op_args=[[1]])
        """
    )
    report = port_source(source, "m.py")
    assert report.verdict == NOT_PORTABLE
    assert report.problems == [
        "line 7: BashOperator.partial(...).expand(env=...): only bash_command can be mapped "
        "here: map the commands, or a @task.bash",
        "line 10: PythonOperator.partial(...).expand_kwargs() is not supported here: use "
        "expand(field=[...]) or a @task mapped with expand_kwargs",
    ]
