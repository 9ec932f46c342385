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
from orchestrator.errors import StateError
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import RunRecord
from orchestrator.store.runs.run_rows import insert_run, make_run_id

r, ti = m.dag_runs, m.task_instances
TRIGGERED = "triggered"  # the run_type of a run a task created
TASK_PREFIX = "task:"  # triggered_by of a run a task created: task:<dag>/<run>/<task>


class TriggerDepthError(StateError):
    """A trigger_dag task whose new run would pass ``max_trigger_depth`` (issue 24)."""


def _parent_of(triggered_by: str | None) -> str | None:
    """The run id in a ``task:<dag_id>/<run_id>/<task_id>`` triggered_by, else None."""
    if not triggered_by or not triggered_by.startswith(TASK_PREFIX):
        return None
    _dag, _, rest = triggered_by[len(TASK_PREFIX) :].partition("/")
    run_id, _, _task = rest.rpartition("/")
    return run_id or None


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
        parent_run_id: str | None = None,
        max_depth: int | None = None,
    ) -> tuple[RunRecord, bool]:
        """The run ``run_id`` of ``target_dag_id``, created now if it does not exist yet;
        (run, created). ``conf`` is checked against the target's params first
        (ConfigError); an unknown DAG is NotFoundError. The new run's trigger depth is
        ``parent_run_id``'s plus one; past ``max_depth`` nothing is created and
        TriggerDepthError names the chain of runs that led here."""
        try:
            return self.get_run(run_id), False  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - not created yet (NotFoundError)
            pass
        depth = 0 if parent_run_id is None else self.trigger_depth(parent_run_id) + 1
        if max_depth is not None and depth > max_depth:
            chain = " -> ".join(f"{d}:{r_id}" for d, r_id in self.trigger_chain(parent_run_id))
            raise TriggerDepthError(
                f"not triggering DAG {target_dag_id!r}: its run would be the {depth}th in a "
                f"chain of triggered runs, over max_trigger_depth ({max_depth}); the chain: "
                f"{chain} -> {target_dag_id}"
            )
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
                trigger_depth=depth,
            )
        return self.get_run(run_id), pk is not None  # type: ignore[attr-defined]

    def trigger_depth(self, run_id: str) -> int:
        """How many trigger_dag tasks made ``run_id`` in a row (0: none); 0 if unknown."""
        with self.read() as conn:
            got = conn.execute(select(r.c.trigger_depth).where(r.c.run_id == run_id)).scalar()
        return int(got or 0)

    def trigger_chain(self, run_id: str | None, limit: int = 1000) -> list[tuple[str, str]]:
        """(dag_id, run_id) of ``run_id`` and the runs whose tasks triggered it, oldest
        first, followed through ``triggered_by`` (at most ``limit`` runs)."""
        chain: list[tuple[str, str]] = []
        seen: set[str] = set()
        with self.read() as conn:
            while run_id is not None and run_id not in seen and len(chain) < limit:
                seen.add(run_id)
                row = conn.execute(
                    select(r.c.dag_id, r.c.triggered_by).where(r.c.run_id == run_id)
                ).first()
                if row is None:
                    break
                chain.append((row.dag_id, run_id))
                run_id = _parent_of(row.triggered_by)
        return chain[::-1]
