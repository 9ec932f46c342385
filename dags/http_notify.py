"""HTTP tasks: ask standalone's own web UI how it is, then (when configured) notify a hook.

`health` calls this machine's `/health`, which `orchestrator standalone` serves, so the
example runs out of the box. `notify` POSTs a JSON summary to the URL in
ORCHESTRATOR_EXAMPLE_HTTP_URL (read when the file is parsed); without one it is
skipped, and its log says why.
"""

import os
from datetime import UTC, datetime, timedelta

from orchestrator import DAG, task

PORT = os.environ.get("ORCHESTRATOR_WEB_PORT", "8080")
HOOK = os.environ.get("ORCHESTRATOR_EXAMPLE_HTTP_URL")  # e.g. http://127.0.0.1:9000/hook

with DAG(
    "http_notify",
    schedule=timedelta(minutes=10),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    description="Checks the UI's /health over HTTP and posts a summary to a hook.",
    tags=["example"],
) as dag:
    # the web UI starts beside the scheduler: the first try may find it not listening yet
    health = dag.http(
        "health",
        f"http://127.0.0.1:{PORT}/health",
        expect_status=[200, 503],  # 503 is an answer too: it says what is wrong
        retries=3,
        retry_delay=timedelta(seconds=5),
    )

    @task.branch
    def endpoint(ctx):
        if HOOK:
            return "notify"
        ctx.log.info("no hook configured: set ORCHESTRATOR_EXAMPLE_HTTP_URL to send one")
        return []

    if HOOK:
        notify = dag.http(
            "notify",
            HOOK,
            method="POST",
            json={"dag": "{{ dag_id }}", "run": "{{ run_id }}", "day": "{{ ds }}"},
            retries=2,
        )
    else:
        notify = dag.shell("notify", "echo 'skipped: no ORCHESTRATOR_EXAMPLE_HTTP_URL'")

    health >> endpoint >> notify
