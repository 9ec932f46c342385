"""What the calendar page reads (issue 27 item 8): a DAG's runs counted by state per
hour of logical date (UTC), over a range; the page buckets the hours into days of the
DAG's timezone. A minutely DAG's year is 525,600 runs but at most 8,784 hours, each a
few states: the database counts, through the ``(dag_id, logical_date)`` index.

>>> store.run_calendar("etl", start, end)  # doctest: +SKIP
[(datetime(2026, 3, 2, 23, tzinfo=UTC), 'success', 60), ...]
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select

from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase


class RunCalendarStore(StoreBase):
    def run_calendar(
        self, dag_id: str, start: datetime, end: datetime
    ) -> list[tuple[datetime, str, int]]:
        """(hour, state, runs) for the runs of ``dag_id`` whose logical date is in
        [``start``, ``end``), hour being the UTC hour it falls in."""
        r = m.dag_runs
        if self.is_postgres:  # type: ignore[attr-defined]
            hour = func.to_char(func.timezone("UTC", r.c.logical_date), "YYYY-MM-DD HH24")
        else:  # stored as UTC text "YYYY-MM-DD HH:MM:SS..."
            hour = func.substr(r.c.logical_date, 1, 13)
        with self.read() as conn:
            rows = conn.execute(
                select(hour.label("hour"), r.c.state, func.count())
                .where(r.c.dag_id == dag_id, r.c.logical_date >= start, r.c.logical_date < end)
                .group_by(hour, r.c.state)
            ).all()
        return [
            (datetime.strptime(h, "%Y-%m-%d %H").replace(tzinfo=UTC), state, n)
            for h, state, n in rows
        ]
