"""Fan-out/fan-in: one task splits the work, one mapped task squares each chunk in
parallel (as many instances as the ``chunks`` param says), one combines."""

from datetime import UTC, datetime, timedelta

from orchestrator import DAG, task

with DAG(
    "fan_out",
    schedule=timedelta(minutes=5),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    description="Splits work into parallel chunks (the chunks param) and combines the results.",
    params={"chunks": 10},
    tags=["example"],
) as dag:

    @task
    def split(ctx):
        return list(range(ctx.params["chunks"]))

    @task
    def square(ctx, chunk):
        ctx.log.info("chunk %d of this run (map index %d)", chunk, ctx.map_index)
        return chunk**2

    @task
    def combine(ctx):
        total = sum(ctx.upstream("square"))  # the squares, in map order
        ctx.log.info("sum of squares: %d", total)
        return total

    # one instance of square per item of split's list: 10 by default, --conf to change
    square.expand(chunk=split) >> combine
