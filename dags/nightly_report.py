"""A cron schedule in a timezone: every day at 02:00 Berlin time, DST-correct."""

from datetime import datetime, timedelta

from orchestrator import DAG, task

with DAG(
    "nightly_report",
    schedule="0 2 * * *",
    timezone="Europe/Berlin",
    start_date=datetime(2026, 1, 1),
    misfire="coalesce",
    max_active_runs=1,
    default_retries=2,
    retry_delay=timedelta(seconds=10),
    description="Builds the nightly sales report (cron in Europe/Berlin).",
    tags=["example", "cron"],
) as dag:

    @task
    def extract(ctx):
        ctx.log.info("extracting data for %s to %s", ctx.data_interval_start, ctx.data_interval_end)
        return {"rows": 1200}

    @task(timeout=timedelta(minutes=10))
    def report(ctx):
        rows = ctx.upstream("extract")["rows"]
        ctx.log.info("report on %d rows for %s", rows, ctx.logical_date.date())
        return {"rows": rows, "pages": rows // 100}

    archive = dag.shell(
        "archive", "echo archiving report for {{ ds }} into /tmp/report-{{ ds_nodash }}"
    )
    extract >> report >> archive
