"""Alert delivery: the watchdog that raises alerts, the notifiers that send them and
the loop that retries them. What users declare lives in
:mod:`orchestrator.authoring.alerts`."""
