"""A task that fails on its first try and succeeds on the retry."""

from datetime import UTC, datetime, timedelta

from orchestrator import DAG, task

with DAG(
    "flaky",
    schedule=timedelta(minutes=2),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    description="Shows retries: the first try fails, the second succeeds.",
    tags=["example", "retries"],
) as dag:

    @task(retries=3, retry_delay=timedelta(seconds=2))
    def call_api(ti):
        if ti.try_number == 1:
            raise ConnectionError("the API did not answer (this happens on try 1 on purpose)")
        ti.log.info("the API answered on try %d", ti.try_number)
        return {"status": 200}

    cleanup = dag.shell(
        "cleanup", "echo cleaning up after try {{ try_number }}", trigger_rule="all_done"
    )
    call_api() >> cleanup
