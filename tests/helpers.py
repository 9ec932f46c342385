"""Small drivers shared by tests: run the whole pipeline on a fake clock."""

from __future__ import annotations

from datetime import timedelta

from orchestrator.clock import FakeClock
from orchestrator.engine.processor import DagProcessor
from orchestrator.engine.scheduler import Scheduler
from orchestrator.engine.worker import Worker
from orchestrator.settings import Settings
from orchestrator.states import RUN_FINISHED
from orchestrator.store import Store


class Harness:
    """Processor, scheduler and worker on one store and one fake clock."""

    def __init__(self, store: Store, settings: Settings, clock: FakeClock, **worker_kw) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.processor = DagProcessor(store, settings)
        self.scheduler = Scheduler(store, clock, settings, scheduler_id="test-scheduler")
        self.worker = Worker(store, clock, settings, worker_id="test-worker", **worker_kw)

    def parse(self):
        return self.processor.scan(self.clock.now())

    def tick(self):
        return self.scheduler.tick(self.clock.now())

    def run_until_finished(
        self, run_id: str, *, step: timedelta = timedelta(seconds=1), max_steps: int = 500
    ):
        """Tick scheduler and worker, advancing the fake clock, until the run finishes."""
        for _ in range(max_steps):
            self.tick()
            self.worker.run_until_idle()
            self.tick()
            run = self.store.get_run(run_id)
            if run.state in RUN_FINISHED:
                return run
            self.clock.advance(step)
        raise AssertionError(f"run {run_id} did not finish: {self.store.get_run(run_id).state}")

    def close(self) -> None:
        self.worker.close()
