"""``doc_md`` (issue 25): a DAG's and a task's Markdown docs on their pages, rendered
with raw HTML and script links refused."""

from __future__ import annotations

import pytest

from tests.helpers import Harness

SOURCE = '''
from orchestrator import DAG, task

with DAG("documented", schedule=None, doc_md="""
# Orders ETL
Loads **orders** nightly. <script>alert("dag")</script>

| table | rows |
|---|---|
| orders | 1200 |

[runbook](https://wiki.example/orders) [bad](javascript:alert(1))
""") as dag:
    @task(doc_md="Reads the `orders` table. <img src=x onerror=alert(1)>")
    def extract():
        return 1
'''


@pytest.fixture
def documented_run(store, settings, clock, write_dag):
    write_dag("documented.py", SOURCE)
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().dags == 1
        assert store.import_errors() == []
        run = store.trigger_run("documented", clock.now())
        run = harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    return run


def test_the_dag_page_renders_its_docs_without_raw_html(client, documented_run):
    html = client.get("/dags/documented").get_data(as_text=True)
    docs = html.split('<div class="markdown">')[1].split("</div>")[0]
    assert "<h1>Orders ETL</h1>" in docs
    assert "<strong>orders</strong>" in docs
    assert "<td>orders</td>" in docs and "<td>1200</td>" in docs
    assert 'href="https://wiki.example/orders"' in docs and 'rel="noopener' in docs
    assert "&lt;script&gt;" in docs and "<script>" not in docs
    assert "javascript:" not in docs.split("[bad]")[0] and 'href="javascript' not in docs


def test_the_task_page_renders_the_tasks_docs(client, documented_run):
    page = client.get(f"/runs/{documented_run.run_id}/tasks/extract").get_data(as_text=True)
    docs = page.split('<div class="markdown">')[1].split("</div>")[0]
    assert "<code>orders</code>" in docs
    assert "&lt;img src=x onerror=alert(1)&gt;" in docs and "<img" not in docs


def test_a_doc_md_that_is_not_text_is_an_import_error(store, settings, clock, write_dag):
    write_dag("bad_doc.py", SOURCE.replace('doc_md="Reads', 'doc_md=7, description="Reads'))
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
    finally:
        harness.close()
    (error,) = store.import_errors()
    assert "task 'extract': doc_md must be a string (Markdown)" in error.message
