"""Assets, producer side: each successful load records an asset event.

``sales_report`` (dags/sales_report.py) is scheduled on these assets and runs once
both have a new event. External systems can emit events too:
``orchestrator assets emit warehouse://sales/daily --extra '{"rows": 10}'``.
"""

from datetime import datetime

from orchestrator import DAG, Asset, task

sales = Asset("warehouse://sales/daily", name="sales", group="warehouse")
costs = Asset("warehouse://costs/daily", name="costs", group="warehouse")

with DAG(
    "ingest_sales",
    schedule="0 5 * * *",
    start_date=datetime(2026, 1, 1),
    description="Loads the day's sales and costs; each load records an asset event.",
    tags=["example", "assets"],
) as dag:

    @task(outlets=[sales])
    def load_sales(ti, logical_date, outlet_events):
        rows = 1200
        ti.log.info("loaded %d sales rows for %s", rows, logical_date.date())
        outlet_events[sales].extra = {"rows": rows}  # optional metadata on the event

    load_sales()

    # a shell task records its outlets' events when it exits 0
    load_costs = dag.shell("load_costs", "echo loading costs for {{ ds }}", outlets=[costs])
