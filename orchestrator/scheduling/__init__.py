"""Pure scheduling decisions: no database, no processes, no clock of their own.

Schedules and fire times (:mod:`.schedule`), the misfire planner (:mod:`.misfire`),
trigger rules (:mod:`.trigger_rules`), retry backoff (:mod:`.retry`) and the
explainer's reasoning (:mod:`.explain`). Everything here takes ``now`` and stored facts
as arguments and returns decisions, so it is tested without a database.
"""
