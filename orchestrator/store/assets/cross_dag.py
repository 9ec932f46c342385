"""Cross-DAG reads and writes for the built-in sensors (issue 15): the state of another
DAG's run or task at a logical date, and a run of another DAG created by a task,
idempotently.

The worker evaluates these checks itself (``engine/sensor_checks.py``), so a task
process never needs the database's address.

>>> store.trigger_dag_once("report", "report__triggered__...", now, ...)  # doctest: +SKIP
(RunRecord(...), True)
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import case, select

from orchestrator.authoring.spec import validate_conf
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import RunRecord
from orchestrator.store.runs.run_rows import insert_run, make_run_id

r, ti = m.dag_runs, m.task_instances
TRIGGERED = "triggered"  # the run_type of a run a task created


def triggered_run_id(
    target_dag_id: str, logical_date: datetime, dag_id: str, run_id: str, task_id: str
) -> str:
    """The run id of the run that task instance (dag_id, run_id, task_id) creates of
    ``target_dag_id``: the same for every try of it, so a retried trigger finds its run."""
    digest = hashlib.sha256(f"{dag_id}\x00{run_id}\x00{task_id}".encode()).hexdigest()[:12]
    return f"{make_run_id(target_dag_id, TRIGGERED, logical_date)}__{digest}"


class CrossDagStore(StoreBase):
    def external_state(
        self, dag_id: str, logical_date: datetime, task_id: str | None
    ) -> tuple[str, str] | None:
        """(run_id, state) of DAG ``dag_id``'s run at ``logical_date`` (its scheduled or
        backfill run first, else its newest), or of task ``task_id`` in that run;
        None if there is no such run yet. A run without that task gives state
        ``"missing"``."""
        with self.read() as conn:
            run = conn.execute(
                select(r.c.id, r.c.run_id, r.c.state)
                .where(r.c.dag_id == dag_id, r.c.logical_date == logical_date)
                .order_by(
                    case((r.c.run_type.in_(["scheduled", "backfill"]), 0), else_=1),
                    r.c.id.desc(),
                )
                .limit(1)
            ).first()
            if run is None:
                return None
            if task_id is None:
                return run.run_id, run.state
            state = conn.execute(
                select(ti.c.state).where(ti.c.run_pk == run.id, ti.c.task_id == task_id)
            ).scalar()
        return run.run_id, state or "missing"

    def trigger_dag_once(
        self,
        target_dag_id: str,
        run_id: str,
        now: datetime,
        *,
        logical_date: datetime,
        conf: dict[str, Any],
        triggered_by: str,
    ) -> tuple[RunRecord, bool]:
        """The run ``run_id`` of ``target_dag_id``, created now if it does not exist yet;
        (run, created). ``conf`` is checked against the target's params first
        (ConfigError); an unknown DAG is NotFoundError."""
        try:
            return self.get_run(run_id), False  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - not created yet (NotFoundError)
            pass
        dag = self.get_dag(target_dag_id)  # type: ignore[attr-defined]
        spec = self.spec(target_dag_id, dag.version_hash)  # type: ignore[attr-defined]
        validate_conf(spec, conf, max_bytes=self.max_conf_bytes)  # type: ignore[attr-defined]
        with self.write() as conn:
            pk = insert_run(
                conn,
                spec,
                dag.version_hash,
                run_type=TRIGGERED,
                logical_date=logical_date,
                interval=(logical_date, logical_date),
                conf=conf,
                now=now,
                triggered_by=triggered_by,
                run_id=run_id,
            )
        return self.get_run(run_id), pk is not None  # type: ignore[attr-defined]
