"""A DAG's page shows the source stored with its version by the DAG processor, never a
file it reads at request time, whatever path the DAG claims (issue 12, item 12)."""

from __future__ import annotations

import html as html_lib
import os
from pathlib import Path

from conftest import START  # noqa: I001  (tests/webui/conftest.py)

from orchestrator.engine.processor import DagProcessor
from webui.secret import SECRET_FILE

FORGED = '''\
SRC = """
from orchestrator import DAG
with DAG({dag_id!r}, schedule=None) as dag:
    dag.shell("t", "true")
"""
exec(compile(SRC, {claimed!r}, "exec"))  # the DAG now says it comes from {claimed}
# MARKER-{marker}
'''


def page(client, dag_id: str) -> str:
    response = client.get(f"/dags/{dag_id}")
    assert response.status_code == 200
    return html_lib.unescape(response.get_data(as_text=True))


def test_a_forged_fileloc_shows_the_parsed_file_not_the_file_it_names(
    app, client, store, settings, dags_dir
):
    secret = Path(settings.state_dir) / SECRET_FILE  # made by create_app: the session key
    assert secret.exists()
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    (dags_dir / "passwd.py").write_text(
        FORGED.format(dag_id="forged", claimed="/etc/passwd", marker="passwd")
    )
    (dags_dir / "secret.py").write_text(
        FORGED.format(dag_id="forged_secret", claimed=str(secret), marker="secret")
    )
    result = DagProcessor(store, settings, parallelism=2).scan(START)
    assert result.errors == 0 and result.dags == 2

    html = page(client, "forged")
    assert "MARKER-passwd" in html and """exec(compile(SRC, '/etc/passwd', "exec"))""" in html
    assert passwd not in html
    assert store.get_dag("forged").fileloc == str(dags_dir / "passwd.py")
    html = page(client, "forged_secret")
    assert "MARKER-secret" in html
    assert secret.read_text().strip() not in html
    api = client.get("/api/v1/dags/forged_secret").get_json()
    assert api["fileloc"] == str(dags_dir / "secret.py")


def test_the_page_never_reads_the_file_at_request_time(app, client, store, settings, dags_dir):
    path = dags_dir / "etl.py"
    path.write_text(FORGED.format(dag_id="etl", claimed=str(path), marker="parsed"))
    DagProcessor(store, settings, parallelism=1).scan(START)
    path.write_text("# MARKER-edited, not parsed yet\n")  # same size class, no rescan
    html = page(client, "etl")
    assert "MARKER-parsed" in html and "MARKER-edited" not in html
    os.unlink(path)
    assert "MARKER-parsed" in page(client, "etl")  # the file is gone: the version's text stays


def test_each_version_keeps_its_own_source(app, client, store, settings, dags_dir):
    path = dags_dir / "etl.py"
    path.write_text(FORGED.format(dag_id="etl", claimed=str(path), marker="one"))
    processor = DagProcessor(store, settings, parallelism=1)
    processor.scan(START)
    first = store.get_dag("etl").version_hash
    path.write_text(FORGED.format(dag_id="etl", claimed=str(path), marker="two-longer"))
    processor.scan(START)
    second = store.get_dag("etl").version_hash
    assert first != second  # only a comment changed: still a new version, with its source
    assert "MARKER-one" in store.version_source("etl", first).text
    assert "MARKER-two-longer" in store.version_source("etl", second).text
    assert "MARKER-two-longer" in page(client, "etl")
