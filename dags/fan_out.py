"""Fan-out/fan-in: one task splits the work, ten run in parallel, one combines."""

from datetime import UTC, datetime, timedelta

from orchestrator import DAG, task

with DAG(
    "fan_out",
    schedule=timedelta(minutes=5),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    description="Splits work into 10 parallel chunks and combines the results.",
    params={"chunks": 10},
    tags=["example"],
) as dag:

    @task
    def split(ctx):
        return list(range(ctx.params["chunks"]))

    @task
    def combine(ctx):
        total = sum(ctx.upstream(f"square_{i}") for i in range(10))
        ctx.log.info("sum of squares: %d", total)
        return total

    def square(ctx, i):
        return ctx.upstream("split")[i] ** 2

    for i in range(10):
        # one function, ten tasks: give each its own task_id
        split >> task(task_id=f"square_{i}")(lambda ctx, i=i: square(ctx, i)) >> combine
