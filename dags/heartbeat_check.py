"""An interval schedule: every 30 seconds, a quick health check."""

from datetime import UTC, datetime, timedelta

from orchestrator import DAG, task

with DAG(
    "heartbeat_check",
    schedule=timedelta(seconds=30),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    misfire="skip",
    misfire_grace=timedelta(seconds=10),
    description="Pings a service every 30 seconds; missed checks are skipped.",
    tags=["example", "interval"],
) as dag:

    @task
    def ping(ti, logical_date):
        ti.log.info("ping at %s", logical_date.isoformat())
        return {"ok": True}

    ping()
