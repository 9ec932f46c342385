"""HTTP tasks: call an endpoint with templated, encoded values, or skip clearly.

Set HTTP_NOTIFY_URL before starting standalone, and let DAG files and tasks inherit it
(they see only the variables task_env_allow and task_env_extra name), for example
standalone's own health check:

    export ORCHESTRATOR_TASK_ENV_EXTRA=HTTP_NOTIFY_URL
    HTTP_NOTIFY_URL=http://127.0.0.1:8080/health orchestrator standalone

Without it, `notify` is skipped and the `endpoint` task's log says why.
"""

import os
from datetime import UTC, datetime, timedelta

from orchestrator import DAG, task

URL = os.environ.get("HTTP_NOTIFY_URL")

with DAG(
    "http_notify",
    schedule=timedelta(minutes=10),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    description="Calls the endpoint in HTTP_NOTIFY_URL, if set, with the run's date.",
    tags=["example"],
) as dag:

    @task.branch
    def endpoint(ti):
        if URL:
            return "notify"
        ti.log.info("no endpoint configured: set HTTP_NOTIFY_URL to call one")
        return []

    notify = dag.http(
        "notify",
        (URL or "http://127.0.0.1:8080/health") + "?day={{ ds }}&run={{ run_id }}",
        expect_status=[200, 503],  # a health check's 503 is an answer too: it says what is wrong
        retries=3,  # the web UI starts beside the scheduler: it may not listen yet
        retry_delay=timedelta(seconds=5),
    )
    endpoint() >> notify
