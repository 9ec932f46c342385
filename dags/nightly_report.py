"""A cron schedule in a timezone: every day at 02:00 Berlin time, DST-correct.

Written in the TaskFlow style: ``report(extract())`` wires extract >> report and hands
extract's result to report at run time; nothing runs while the file is parsed.
"""

from datetime import datetime, timedelta

from orchestrator import DAG, task

with DAG(
    "nightly_report",
    schedule="0 2 * * *",
    timezone="Europe/Berlin",
    start_date=datetime(2026, 1, 1),
    catchup=False,  # one run for the latest missed night (misfire="coalesce")
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=10)},
    description="Builds the nightly sales report (cron in Europe/Berlin).",
    tags=["example", "cron"],
) as dag:

    @task
    def extract(ti, data_interval_start, data_interval_end):
        ti.log.info("extracting data for %s to %s", data_interval_start, data_interval_end)
        return {"rows": 1200}

    @task(execution_timeout=timedelta(minutes=10))  # Airflow's name of timeout=
    def report(rows, logical_date, ti):
        ti.log.info("report on %d rows for %s", rows, logical_date.date())
        return {"rows": rows, "pages": rows // 100}

    archive = dag.shell(
        "archive", "echo archiving report for {{ ds }} into /tmp/report-{{ ds_nodash }}"
    )
    report(extract()["rows"]) >> archive
