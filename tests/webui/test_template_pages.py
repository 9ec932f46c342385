"""The task page and templates (issue 25): a command from a template file names it; a
command using user-defined macros is not rendered by the web server (it never imports
DAG files) and says where to see it; macros render in the page as in the try."""

from __future__ import annotations

from orchestrator import DAG
from orchestrator.authoring.spec import serialize_dag
from tests.webui.conftest import START


def test_the_task_page_renders_macros_names_template_files_and_leaves_user_macros(
    client, store, tmp_path, monkeypatch
):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.sh").write_text("echo {{ macros.ds_add(ds, 1) }}\n")
    monkeypatch.chdir(tmp_path)
    dag = DAG("pages", schedule=None, user_defined_macros={"secret_sauce": lambda: "x"})
    dag.fileloc = str(tmp_path / "pages.py")  # as if parsed from a file beside scripts/
    with dag:
        dag.shell("from_file", "scripts/run.sh")
        dag.shell("user", "echo {{ secret_sauce() }}")
    store.save_dag(serialize_dag(dag), START)
    run = store.trigger_run("pages", START)

    page = client.get(f"/runs/{run.run_id}/tasks/from_file").get_data(as_text=True)
    assert 'id="template-file"' in page and "scripts/run.sh" in page
    assert "echo 2026-01-02" in page  # rendered: macros work in the page too

    page = client.get(f"/runs/{run.run_id}/tasks/user").get_data(as_text=True)
    assert "user_defined_macros or user_defined_filters, which only a task process" in page
    assert "echo x" not in page
