"""A shell task run by a real worker with hostile values in the run's conf (issue 12, item 8):
values reach the command through its environment and are never parsed by the shell, in
every quoting context; a template that puts a value where the shell cannot receive it is
an import error naming the file, line and task."""

from __future__ import annotations

from pathlib import Path

from orchestrator.authoring.loader import DagImportError, load_file
from orchestrator.engine.tasktest import run_task_test

CONTEXTS = {
    "dq": 'echo "value: {{ params.x }}"',
    "bare": "echo value: {{ params.x }}",
    "sq": "echo 'value: {{ params.x }}'",
    "bq": 'echo "value: `printf %s {{ params.x }}`"',
    "cmdsub": "echo value: $(printf %s {{ params.x }})",
    "heredoc": "cat <<EOF\nvalue: {{ params.x }}\nEOF",
}


def write_echo_values(write_dag) -> None:
    tasks = "\n".join(f"    dag.shell({name!r}, {command!r})" for name, command in CONTEXTS.items())
    write_dag(
        "echo_values.py",
        "from orchestrator import DAG\n\n"
        'with DAG("echo_values", schedule=None, params={"x": "safe"}) as dag:\n' + tasks + "\n",
    )


def hostile(pwned: Path) -> str:
    return f"$(id>{pwned}) `touch {pwned}` '; touch {pwned}; ' \"; touch {pwned}; \""


def test_hostile_conf_runs_nothing_in_any_context(harness, write_dag, settings, tmp_path):
    write_echo_values(write_dag)
    harness.parse()
    pwned = tmp_path / "pwned"
    payload = hostile(pwned)
    run = harness.store.trigger_run("echo_values", harness.clock.now(), conf={"x": payload})
    assert harness.run_until_finished(run.run_id).state == "success"
    assert not pwned.exists()
    for name in CONTEXTS:
        [try_] = harness.store.tries(run.run_id, name)
        log = (Path(settings.log_dir) / try_.log_path).read_text()
        assert f"\nvalue: {payload}\n" in log, (name, log)
        assert "command: " in log  # the readable command, values written in
    [try_] = harness.store.tries(run.run_id, "dq")
    log = (Path(settings.log_dir) / try_.log_path).read_text()
    assert 'command: echo "value: \\$(id>' in log


def test_tasks_test_runs_a_shell_task_the_same_safe_way(write_dag, settings, tmp_path, capfd):
    write_echo_values(write_dag)
    pwned = tmp_path / "pwned"
    payload = hostile(pwned)
    for name in CONTEXTS:
        assert run_task_test(settings, "echo_values", name, None, {"x": payload}) == 0
        out = capfd.readouterr().out
        assert f"\nvalue: {payload}\n" in out, (name, out)
    assert not pwned.exists()


def test_a_value_in_a_quoted_heredoc_is_an_import_error_naming_file_and_task(write_dag):
    path = write_dag(
        "quoted_heredoc.py",
        """
        from orchestrator import DAG

        with DAG("quoted_heredoc", schedule=None) as dag:
            dag.shell("write", "cat <<'EOF'\\n{{ params.x }}\\nEOF")
        """,
    )
    try:
        load_file(str(path))
    except DagImportError as exc:
        message = exc.message
    else:
        raise AssertionError("the template was accepted")
    assert "quoted_heredoc.py:5: task 'write': bad command template: {{ params.x }}" in message
    assert "heredoc whose delimiter is quoted (<<'EOF')" in message
