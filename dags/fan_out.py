"""Fan-out/fan-in: one task splits the work, one mapped task squares each chunk in
parallel (as many instances as the ``chunks`` param says), one combines.

Written in the TaskFlow style: ``combine(square.expand(chunk=split()))`` builds
split >> square >> combine; combine receives the squares as a list, in map order.
"""

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
    def split(params):
        return list(range(params["chunks"]))

    @task
    def square(chunk, ti):
        ti.log.info("chunk %d of this run (map index %d)", chunk, ti.map_index)
        return chunk**2

    @task
    def combine(squares, ti):
        total = sum(squares)  # the squares, in map order
        ti.log.info("sum of squares: %d", total)
        return total

    # one instance of square per item of split's list: 10 by default, --conf to change
    combine(square.expand(chunk=split()))
