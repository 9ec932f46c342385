"""Read queries the web UI needs that the store does not offer (yet).

Plain SQLAlchemy Core over :mod:`orchestrator.store.models`, inside the store's
read transactions; records, not rows, come out. Nothing here writes.

>>> marks = recent_runs(store, per_dag=10)    # doctest: +SKIP
>>> [m.state for m in marks["nightly_report"]]  # doctest: +SKIP
['success', 'failed', 'running']
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from orchestrator.store import Store
from orchestrator.store import models as m
from orchestrator.store.records import Record


@dataclass(frozen=True)
class RunMark(Record):
    """One run as a coloured mark in the DAG list."""

    run_id: str
    run_type: str
    logical_date: datetime
    state: str


def recent_runs(
    store: Store, *, per_dag: int = 10, dag_ids: list[str] | None = None
) -> dict[str, list[RunMark]]:
    """The last ``per_dag`` runs of every DAG (or of ``dag_ids``), oldest first.

    One query for all DAGs: runs are numbered newest first within each DAG by a
    window function (SQLite >= 3.25 and PostgreSQL both have them) and the rest
    are cut off in the database.
    """
    r = m.dag_runs
    rank = (
        func.row_number()
        .over(partition_by=r.c.dag_id, order_by=(r.c.logical_date.desc(), r.c.id.desc()))
        .label("rank")
    )
    inner = select(r.c.dag_id, r.c.run_id, r.c.run_type, r.c.logical_date, r.c.state, rank)
    if dag_ids is not None:
        if not dag_ids:
            return {}
        inner = inner.where(r.c.dag_id.in_(dag_ids))
    ranked = inner.subquery()
    q = (
        select(ranked)
        .where(ranked.c.rank <= per_dag)
        .order_by(ranked.c.dag_id, ranked.c.rank.desc())
    )
    out: dict[str, list[RunMark]] = {}
    with store.read() as conn:
        for row in conn.execute(q):
            out.setdefault(row.dag_id, []).append(
                RunMark(row.run_id, row.run_type, row.logical_date, row.state)
            )
    return out


def ping(store: Store) -> None:
    """Raise if the database does not answer a trivial query."""
    with store.read() as conn:
        conn.execute(select(1)).scalar_one()
