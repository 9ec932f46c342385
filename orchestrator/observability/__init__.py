"""What shows what happened: alert delivery (:mod:`.alerts`), Prometheus metrics
(:mod:`.metrics`), retention (:mod:`.retention`) and logging set-up
(:mod:`.logging_setup`)."""
