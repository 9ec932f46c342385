"""Assets, consumer side: runs when both sales and costs have a new event.

``schedule=[sales, costs]`` waits for every listed asset; ``sales | costs`` would run on
either, and ``AssetOrTimeSchedule("0 6 * * *", [sales])`` on a time schedule as well.
``orchestrator dags why sales_report`` says what it is waiting for.
"""

from orchestrator import DAG, Asset, task

sales = Asset("warehouse://sales/daily", name="sales", group="warehouse")
costs = Asset("warehouse://costs/daily", name="costs", group="warehouse")

with DAG(
    "sales_report",
    schedule=[sales, costs],
    description="Builds the margin report once sales and costs have both landed.",
    tags=["example", "assets"],
) as dag:

    @task
    def report(ti, triggering_asset_events):
        events = [e for uri in triggering_asset_events for e in triggering_asset_events[uri]]
        for event in events:  # what started this run
            made_by = event.source_run_id or event.emitter
            ti.log.info("%s at %s by %s: %s", event.uri, event.at, made_by, event.extra)
        return {"events": len(events)}

    report()
